"""Links between entities come from what is stored, resolved to campaign ids at write time."""

from __future__ import annotations

from entity_memory.domain.index_entries import index_entry_for
from entity_memory.domain.links import EntityNames, Links, campaign_key, links_of
from entity_memory.domain.merge import merge
from entity_memory.service.batch_upsert import upsert_batch
from entity_memory.storage.store import EntityStore
from tests.unit.factories import campaign, decision, item, metric, pain_point


def entry_of(entity_input: object) -> object:
    return merge(None, entity_input, "u1", "s1", 1).entity  # type: ignore[arg-type]


def test_campaign_key_drops_the_generic_words() -> None:
    assert campaign_key("Campaign Alpha") == campaign_key("alpha campaign") == "alpha"
    assert campaign_key("campaign-alpha") == "alpha"


def test_stated_campaign_resolves_by_name_or_alias() -> None:
    stored = entry_of(campaign(name="Greek Islands Packages", aliases=["Greece"]))
    names = EntityNames([index_entry_for(stored)])  # type: ignore[arg-type]
    by_alias = entry_of(metric(name="Greece CTR", metadata={"kpi": "CTR", "campaign": "greece"}))
    assert links_of(by_alias, names) == Links([stored.id], [], [])  # type: ignore[attr-defined, arg-type]


def test_a_campaign_named_in_the_name_is_evidence_and_no_evidence_stays_unlinked() -> None:
    stored = entry_of(campaign())
    names = EntityNames([index_entry_for(stored)])  # type: ignore[arg-type]
    named = entry_of(metric(metadata={"kpi": "CPA", "value": 40}))  # "Alpha CPA"
    account = entry_of(metric(name="Account CPA", metadata={"kpi": "CPA", "value": 40}))
    assert links_of(named, names).campaigns == ["campaign-alpha"]  # type: ignore[arg-type]
    assert links_of(account, names) == Links([], [], [])  # type: ignore[arg-type]


async def test_links_are_kept_in_the_index_entries(store: EntityStore) -> None:
    await upsert_batch(store, "u1", [campaign(), metric(), decision(), pain_point()], "s1")
    by_type = {e.type: e for e in (await store.read_index("u1")).entries}
    for kind in ("metric", "decision", "pain_point"):
        assert by_type[kind].links == ["campaign-alpha"]
    assert by_type["campaign"].links is None


async def test_a_campaign_written_later_links_what_named_it(store: EntityStore) -> None:
    beta = {"kpi": "CTR", "value": 2.0, "campaign": "Campaign Beta"}
    await upsert_batch(store, "u1", [metric(name="Beta CTR", metadata=beta)], "s1")
    [before] = (await store.read_index("u1")).entries
    assert before.links is None and before.pending_links == ["beta"]
    await upsert_batch(store, "u1", [campaign(name="Campaign Beta")], "s2")
    after = {e.type: e for e in (await store.read_index("u1")).entries}["metric"]
    assert after.links == ["campaign-beta"] and after.pending_links is None


async def test_a_resolved_pain_point_is_marked_in_its_entry(store: EntityStore) -> None:
    done = item(type="pain_point", name="Old gap", metadata={"resolved": True})
    await upsert_batch(store, "u1", [done, pain_point()], "s1")
    resolved = {e.name: e.resolved for e in (await store.read_index("u1")).entries}
    assert resolved == {"Old gap": True, "Conversion tracking gaps": None}


def _fix(name: str, *affected: str) -> object:
    return decision(name=name, metadata={"action": name, "affectedEntities": list(affected)})


async def test_a_decision_naming_a_pain_point_addresses_it(store: EntityStore) -> None:
    fills = item(type="pain_point", name="Fake form fills", aliases=["bot submissions"])
    fix = _fix("Add a captcha", "Campaign Alpha", "bot submissions")
    await upsert_batch(store, "u1", [campaign(), fills, fix], "s1")
    entries = {e.type: e for e in (await store.read_index("u1")).entries}
    assert entries["decision"].addresses == ["fake-form-fills"]
    assert entries["decision"].links == ["campaign-alpha"]
    assert entries["decision"].pending_links is None


async def test_a_problem_named_by_some_words_is_the_one_pain_point_holding_them_all(
    store: EntityStore,
) -> None:
    fills = item(type="pain_point", name="Fake form fills")
    errors = item(type="pain_point", name="Fake form errors")
    await upsert_batch(store, "u1", [fills, errors], "s1")
    words = _fix("Block the bots", "fake fills")  # only "Fake form fills" holds both words
    both = _fix("Review the form", "fake form")  # both pain points hold these
    one_word = _fix("Hide the field", "form")  # a single word names nothing
    await upsert_batch(store, "u1", [words, both, one_word], "s2")
    entries = {e.name: e for e in (await store.read_index("u1")).entries}
    assert entries["Block the bots"].addresses == ["fake-form-fills"]
    assert entries["Review the form"].addresses is None
    assert entries["Hide the field"].addresses is None
    # Matched by words only, the name stays pending: it may be a campaign's still to come.
    assert entries["Block the bots"].pending_links == ["fake fills"]


async def test_a_word_matched_name_still_links_the_campaign_written_later(
    store: EntityStore,
) -> None:
    pain = item(type="pain_point", name="Brand search cannibalisation")
    await upsert_batch(store, "u1", [pain, _fix("Cap the brand bids", "Brand Search")], "s1")
    await upsert_batch(store, "u1", [campaign(name="Brand Search")], "s2")
    entry = {e.type: e for e in (await store.read_index("u1")).entries}["decision"]
    assert entry.links == ["brand-search"]
    assert entry.addresses == ["brand-search-cannibalisation"]
    assert entry.pending_links is None


async def test_a_pain_point_written_later_is_addressed_by_the_decision_that_named_it(
    store: EntityStore,
) -> None:
    fixes = [_fix("Exclude app placements", "app clicks"), _fix("Add a captcha", "bot traffic")]
    await upsert_batch(store, "u1", fixes, "s1")
    before = {e.name: e for e in (await store.read_index("u1")).entries}
    assert before["Exclude app placements"].pending_links == ["app clicks"]
    exact = item(type="pain_point", name="App clicks")
    by_words = item(type="pain_point", name="Bot traffic on display")
    await upsert_batch(store, "u1", [exact, by_words], "s2")
    after = {e.name: e for e in (await store.read_index("u1")).entries}
    assert after["Exclude app placements"].addresses == ["app-clicks"]
    assert after["Exclude app placements"].pending_links is None
    assert after["Add a captcha"].addresses == ["bot-traffic-on-display"]


async def test_only_decisions_address_pain_points(store: EntityStore) -> None:
    """A metric's campaign field naming a pain point is no fix, and stays pending."""
    leak = {"kpi": "CTR", "value": 2.0, "campaign": "App clicks"}
    await upsert_batch(store, "u1", [item(type="pain_point", name="App clicks")], "s1")
    await upsert_batch(store, "u1", [metric(name="Leak CTR", metadata=leak)], "s2")
    entry = {e.type: e for e in (await store.read_index("u1")).entries}["metric"]
    assert entry.addresses is None and entry.links is None
