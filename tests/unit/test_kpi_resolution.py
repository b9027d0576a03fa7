"""One entity per real thing: KPI synonyms of one owner resolve to one metric at write time."""

from __future__ import annotations

from entity_memory.domain.kpi import canonical_kpi, qualifier
from entity_memory.domain.models import IndexEntry
from entity_memory.extraction.base import Message
from entity_memory.extraction.registry import build_extractor
from entity_memory.extraction.resolve import Resolver, fuzzy_same
from entity_memory.service.bindings import Bindings
from entity_memory.service.extraction.pipeline import SessionExtraction
from entity_memory.settings import Settings
from entity_memory.storage.d1 import CountingD1
from entity_memory.storage.kv import CountingKV
from entity_memory.storage.ledger import Ledger
from entity_memory.storage.store import EntityStore
from tests.unit.factories import campaign, metric

from .conftest import Clock

DAY = 24 * 60 * 60 * 1000


def test_kpi_synonyms_share_a_canonical_kpi() -> None:
    for text in ("cost per booking", "Cost per acquisition", "CPA", "cost per conversion"):
        assert canonical_kpi(text) == "CPA"
    assert canonical_kpi("cost per lead") == canonical_kpi("CPL") == "CPL"
    assert canonical_kpi("Monthly spend") is None


def test_the_qualifier_is_what_is_left_of_the_name() -> None:
    assert qualifier("Alpha cost per booking", ["alpha"]) == qualifier("Alpha CPA", ["alpha"])
    assert qualifier("Alpha mobile CPA", ["alpha"]) == {"mobile"}


def stored(name: str, kpi: str, links: list[str] | None) -> IndexEntry:
    slug = name.lower().replace(" ", "-")
    return IndexEntry(
        id=slug, type="metric", name=name, importance=0.5, updated_at=1, kpi=kpi, links=links
    )


def campaign_entry() -> IndexEntry:
    return IndexEntry(
        id="campaign-alpha", type="campaign", name="Campaign Alpha", importance=0.5, updated_at=1
    )


def test_a_synonym_of_the_same_campaign_resolves_onto_the_stored_metric() -> None:
    resolver = Resolver([campaign_entry(), stored("Alpha CPA", "CPA", ["campaign-alpha"])])
    booking = metric(name="Alpha cost per booking", metadata={"kpi": "cost per booking"})
    resolved, entry = resolver.resolve(booking)
    assert entry is not None and resolved.id == "alpha-cpa"  # type: ignore[attr-defined]
    assert "Alpha cost per booking" in resolved.aliases


def test_no_merge_across_campaigns_kpis_or_qualifiers() -> None:
    resolver = Resolver([campaign_entry(), stored("Alpha CPA", "CPA", ["campaign-alpha"])])
    for other in (
        metric(name="Account cost per booking", metadata={"kpi": "cost per booking"}),
        metric(name="Alpha cost per lead", metadata={"kpi": "cost per lead"}),
        metric(name="Alpha mobile cost per booking", metadata={"kpi": "cost per booking"}),
        # a cost per something the vocabulary has no KPI for, nor any other measurement
        metric(name="Alpha cost per trial", metadata={"kpi": "cost per trial"}),
        metric(name="Alpha cost per video view", metadata={"kpi": "cost per video view"}),
    ):
        assert resolver.resolve(other)[1] is None, other.name


def test_names_that_differ_by_what_a_cost_is_per_are_different_things() -> None:
    """'cost per <thing>' shares `cpa` with a CPA for ranking; names still differ in 'cost'."""
    assert not fuzzy_same("Alpha CPA", "Alpha cost per trial")
    assert not fuzzy_same("Raise Alpha CPA target", "Raise Alpha cost per trial target")
    assert not fuzzy_same("Alpha cost per trial", "Alpha cost per quote")


async def test_two_kpi_synonyms_of_one_campaign_end_as_one_metric_with_both_observations(
    kv: CountingKV, clock: Clock, db: CountingD1
) -> None:
    ledger = Ledger(db)
    store = EntityStore(kv, Settings(), clock, ledger)
    bindings = Bindings(kv=kv, clock=clock, db=db, vars={"EXTRACTOR": "rules"})
    run = SessionExtraction(store, ledger, bindings, build_extractor)
    said = {
        "s1": "Campaign Alpha runs on Manual CPC. Campaign Alpha's cost per booking is $48.",
        "s2": "Campaign Alpha's CPA is $41 now.",
    }
    for session, text in said.items():
        clock.advance(DAY)
        await run.run("u1", session, [Message(role="user", content=text)], "rules")
    metrics = [e for e in await store.list("u1") if e.type == "metric"]
    assert len(metrics) == 1 and metrics[0].links == ["campaign-alpha"]
    doc = await store.get("u1", "metric", metrics[0].id)
    assert doc is not None
    assert [(h.value, h.session_id) for h in doc.metadata.history] == [(48, "s1"), (41, "s2")]  # type: ignore[attr-defined]


def _campaign_entry(name: str) -> IndexEntry:
    slug = name.lower().replace(" ", "-")
    return IndexEntry(id=slug, type="campaign", name=name, importance=0.5, updated_at=1)


def test_a_new_name_with_the_stored_name_as_alias_renames_the_campaign() -> None:
    from entity_memory.domain.kinds import entity_input_adapter

    resolver = Resolver([_campaign_entry("Winter Clearance"), _campaign_entry("Gift Cards")])

    def campaign(name: str, aliases: list[str]) -> object:
        doc = {"type": "campaign", "name": name, "aliases": aliases}
        return entity_input_adapter.validate_python(doc)

    renamed, entry = resolver.resolve(campaign("Spring Sale", ["Winter Clearance"]))  # type: ignore[arg-type]
    assert entry is not None and entry.id == "winter-clearance"
    assert (renamed.id, renamed.name) == ("winter-clearance", "Spring Sale")
    # A name that is itself stored is a mention of that entity, not a rename onto it.
    same, _ = resolver.resolve(campaign("Gift Cards", ["Winter Clearance"]))  # type: ignore[arg-type]
    assert (same.id, same.name) == ("gift-cards", "Gift Cards")
    # The stored name written otherwise is no rename: the stored name stays.
    variant, _ = resolver.resolve(campaign("Winter Clearance campaign", ["Winter Clearance"]))  # type: ignore[arg-type]
    assert (variant.id, variant.name) == ("winter-clearance", "Winter Clearance")


def test_what_a_cost_is_per_is_part_of_the_metric() -> None:
    from entity_memory.domain.kpi import counted_thing

    assert counted_thing("Loft cost per tenancies") == "tenancy"
    assert counted_thing("Loft CPA", "CPA", "Cost per viewing booked is $19.") == "viewing"
    assert counted_thing("Loft CPA", "cost per conversion") is None  # said generically
    assert counted_thing("Loft CPA", "CPA", "$12 a day, cost per click $2") is None


def counted(name: str, kpi: str, links: list[str] | None, counts: str | None) -> IndexEntry:
    entry = stored(name, kpi, links)
    entry.counts = counts
    return entry


def test_two_cpas_that_count_different_things_stay_apart() -> None:
    """A cost per viewing and a cost per signed tenancy both fold to CPA: two measurements."""
    viewings = counted("Alpha CPA", "CPA", ["campaign-alpha"], "viewing")
    resolver = Resolver([campaign_entry(), viewings])
    tenancy = metric(
        name="Alpha cost per tenancy", metadata={"kpi": "CPA"}, content="A tenancy costs $410."
    )
    assert resolver.resolve(tenancy)[1] is None
    # The same thing under the plain KPI, said in its sentence, is the stored metric.
    again = metric(
        name="Alpha CPA", metadata={"kpi": "CPA"}, content="Cost per viewing is $17 now."
    )
    assert resolver.resolve(again)[1] == viewings
    plain = metric(name="Alpha cost per acquisition", metadata={"kpi": "CPA"})
    assert resolver.resolve(plain)[1] == viewings


def test_a_cpa_named_otherwise_finds_the_one_that_counts_the_same_thing() -> None:
    """Two stored CPAs of one campaign: a candidate goes to the one counting its thing, and a
    plain stored CPA is taken only when none does."""
    plain = counted("Alpha CPA", "CPA", ["campaign-alpha"], None)
    trials = counted("Alpha cost per trial", "CPA", ["campaign-alpha"], "trial")
    resolver = Resolver([campaign_entry(), plain, trials])
    cand = metric(name="Alpha cost per trials", metadata={"kpi": "CPA"})
    assert resolver.resolve(cand)[1] == trials
    by_sentence = metric(
        name="CPA of Alpha", metadata={"kpi": "CPA"}, content="Cost per trial is $9."
    )
    assert resolver.resolve(by_sentence)[1] == trials
    assert Resolver([campaign_entry(), trials, plain]).resolve(by_sentence)[1] == trials


def test_a_short_form_of_the_campaign_name_is_the_same_campaign_metric() -> None:
    """A KPI stated of "Harbour Tours" is the one stored of "Harbour Tours - Search" when that
    is the only campaign holding those words; with two such campaigns it is neither."""
    tours = _campaign_entry("Harbour Tours - Search")
    roas = stored("Harbour Tours - Search ROAS", "ROAS", [tours.id])
    short = metric(name="Harbour Tours ROAS", metadata={"kpi": "ROAS", "campaign": "Harbour Tours"})
    assert Resolver([tours, roas]).resolve(short)[1] == roas
    # The other way: a stored metric whose campaign was written in short, not yet linked.
    pending = stored("Harbour Tours ROAS", "ROAS", None)
    pending.pending_links = ["harbour tours"]
    full = metric(
        name="Harbour Tours - Search return on ad spend",
        metadata={"kpi": "ROAS", "campaign": "Harbour Tours - Search"},
    )
    assert Resolver([tours, pending]).resolve(full)[1] == pending
    twice = [tours, _campaign_entry("Harbour Tours - Display"), roas]
    assert Resolver(twice).resolve(short)[1] is None


def test_a_metric_written_before_its_campaign_under_a_short_name_is_found_later() -> None:
    """ "Tulip Bulbs ROAS" was stored before any campaign held those words; "Spring Tulip Bulbs"
    came later: its ROAS is the stored one. Two stored campaigns' metrics never merge so."""
    early = stored("Tulip Bulbs ROAS", "ROAS", None)
    early.pending_links = ["tulip bulbs"]
    spring = _campaign_entry("Spring Tulip Bulbs")
    later = metric(
        name="Spring Tulip Bulbs ROAS", metadata={"kpi": "ROAS", "campaign": "Spring Tulip Bulbs"}
    )
    assert Resolver([early]).resolve(later)[1] == early
    assert Resolver([spring, early]).resolve(later)[1] == early
    autumn = _campaign_entry("Autumn Tulip Bulbs Sale")
    theirs = stored("Autumn Tulip Bulbs Sale ROAS", "ROAS", [autumn.id])
    assert Resolver([spring, autumn, theirs]).resolve(later)[1] is None


def unfolded(name: str, links: list[str] | None = None) -> IndexEntry:
    """A stored metric of a KPI the vocabulary does not fold (no canonical KPI)."""
    slug = name.lower().replace(" ", "-")
    return IndexEntry(id=slug, type="metric", name=name, importance=0.5, updated_at=1, links=links)


def test_a_metric_of_another_measure_never_joins_a_series_by_looks() -> None:
    """Names that share all but one word are two measurements when that word qualifies one:
    a channel of the count, its period. Folding them would make one series of two."""
    resolver = Resolver([unfolded("Marlow Dental bookings"), unfolded("Marlow Dental spend")])
    for other in (
        metric(name="Marlow Dental phone bookings", metadata={"kpi": "phone bookings"}),
        metric(name="Marlow Dental weekly bookings", metadata={"kpi": "bookings"}),
        metric(name="Marlow Dental monthly spend", metadata={"kpi": "spend"}),
    ):
        _, entry = resolver.resolve(other)
        assert entry is None, other.name


def test_a_metric_of_an_unfolded_kpi_still_resolves_by_its_words() -> None:
    resolver = Resolver([unfolded("Account spend"), unfolded("Marlow Dental bookings")])
    for same, stored_id in (
        (metric(name="Total spend", metadata={"kpi": "spend"}), "account-spend"),
        (
            metric(name="marlow dental Bookings", metadata={"kpi": "bookings"}),
            "marlow-dental-bookings",
        ),
    ):
        _, entry = resolver.resolve(same)
        assert entry is not None and entry.id == stored_id, same.name


def campaign_named(name: str) -> IndexEntry:
    slug = name.lower().replace(" ", "-")
    return IndexEntry(id=slug, type="campaign", name=name, importance=0.5, updated_at=1)


def test_a_campaign_named_in_a_short_form_is_the_only_one_holding_its_words() -> None:
    # With a channel word too ("display"), which fuzzy matching sets apart.
    for short, full in (
        ("hazel jars", "Autumn Hazel Jars"),
        ("walnut display", "Walnut Oil Display"),
    ):
        resolver = Resolver(
            [campaign_named("Autumn Hazel Jars"), campaign_named("Walnut Oil Display")]
        )
        resolved, entry = resolver.resolve(campaign(name=short))
        assert entry is not None and entry.name == full
        assert resolved.name == full and short in resolved.aliases


def test_a_short_form_two_campaigns_hold_or_a_single_word_stays_apart() -> None:
    for other in ("hazel jars", "Hazel", "Hazel Jars Export"):
        stored = [campaign_named("Hazel Jars North"), campaign_named("Hazel Jars South")]
        _, entry = Resolver(stored).resolve(campaign(name=other))
        assert entry is None, other


def test_a_metric_of_a_campaign_in_short_form_is_named_after_the_stored_campaign() -> None:
    resolver = Resolver([campaign_named("Spring Elm Boxes")])
    short = metric(
        name="elm boxes CPA", metadata={"kpi": "CPA", "value": 31, "campaign": "elm boxes"}
    )
    resolved, entry = resolver.resolve(short)
    assert entry is None  # a new metric, of the stored campaign
    assert resolved.name == "Spring Elm Boxes CPA" and "elm boxes CPA" in resolved.aliases
    assert resolved.metadata.campaign == "Spring Elm Boxes"  # type: ignore[attr-defined]
