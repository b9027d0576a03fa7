"""Resolution against a large index reads only the entries a candidate could match, and
answers what a scan in index order would (the first match)."""

from __future__ import annotations

import pytest

from entity_memory.domain.models import IndexEntry
from entity_memory.extraction import resolve as resolve_module
from entity_memory.extraction.resolve import Resolver
from tests.unit.factories import campaign


def entry(name: str, aliases: tuple[str, ...] = (), id_: str | None = None) -> IndexEntry:
    slug = id_ or name.lower().replace(" ", "-")
    return IndexEntry(
        id=slug, type="campaign", name=name, importance=0.5, updated_at=1, aliases=list(aliases)
    )


def test_the_first_entry_in_index_order_wins() -> None:
    resolver = Resolver(
        [entry("Harbor Search", id_="a"), entry("Harbor Display", ("Harbor Search",))]
    )
    assert resolver.resolve(campaign(name="harbor search"))[1].id == "a"  # type: ignore[union-attr]
    resolver = Resolver([entry("Brand Search North"), entry("Brand North Search Ads")])
    found = resolver.resolve(campaign(name="North Brand Search"))[1]
    assert found is not None and found.name == "Brand Search North"  # fuzzy, the first of two


def test_a_campaign_id_finds_its_entry_by_id_or_alias() -> None:
    resolver = Resolver([entry("Alpha"), entry("Beta", ("cmp-77",))])
    found = resolver.resolve(campaign(name="Gamma", metadata={"campaign_id": "cmp-77"}))[1]
    assert found is not None and found.name == "Beta"


def test_a_candidate_of_a_big_index_is_compared_with_few_entries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A job's chunks resolved each candidate against every stored name: 2,000 entries made a
    chunk take seconds of uninterrupted CPU. Numbers are pinned, so "Tern 1999" can only
    fuzzily match names with that number."""
    compared: list[str] = []
    real = resolve_module.fuzzy_same

    def counting(a: str, b: str) -> bool:
        compared.append(b)
        return real(a, b)

    monkeypatch.setattr(resolve_module, "fuzzy_same", counting)
    resolver = Resolver([entry(f"Tern {i}") for i in range(2_000)])
    for i in range(40):
        assert resolver.resolve(campaign(name=f"New Tern {2_000 + i}"))[1] is None
    assert resolver.resolve(campaign(name="Tern 1999 campaign"))[1] is not None  # by name
    found = resolver.resolve(campaign(name="Tern North 1999"))[1]
    assert found is not None and found.name == "Tern 1999"  # fuzzy: one term more
    assert len(compared) <= 5, compared
