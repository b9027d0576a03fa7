"""Only what the task needs: a relevance floor, always-injected preferences and open pain
points, a chosen campaign's linked entities, and a fallback for tasks that name nothing."""

from __future__ import annotations

import random

from entity_memory.domain.kind import companions
from entity_memory.domain.models import IndexEntry
from entity_memory.domain.ranking import signals
from entity_memory.domain.selection import (
    FALLBACK_ENTITIES,
    FALLBACK_REASON,
    RELEVANCE_FLOOR,
    STANDOUT_MAX,
    choose,
)
from entity_memory.embeddings.vectors import rescale
from entity_memory.service.batch_upsert import upsert_batch
from entity_memory.service.retrieval import retrieve_for_context
from entity_memory.storage.store import EntityStore
from tests.unit.conftest import DAY, Clock
from tests.unit.factories import campaign, decision, item, metric, pain_point, preference

COMPANIONS = companions()

#: What a decision's content may say besides its name (shares no word with the tasks).
NOTE = "agreed on the weekly call after going through the account together, step by step"
REGIONS = ("Nordics", "Iberia", "Benelux", "Balkans", "Baltics", "Andes")


def regional_campaigns() -> list[object]:
    return [
        campaign(name=f"{region} Search", content=f"{region} search campaign, budget $50/day")
        for region in REGIONS
    ]


async def test_an_unrelated_task_does_not_get_every_entity(store: EntityStore) -> None:
    solved = item(type="pain_point", name="Feed errors", metadata={"resolved": True})
    stored = [*regional_campaigns(), preference(), pain_point(), solved]
    await upsert_batch(store, "u1", stored, "s1")  # type: ignore[arg-type]
    found = await retrieve_for_context(store, "u1", "Write a haiku about autumn leaves")
    names = [e.name for e in found.entities]
    assert found.fallback == FALLBACK_REASON and found.relevant == 0
    assert "Concise weekly summaries" in names and "Conversion tracking gaps" in names
    assert "Feed errors" not in names  # resolved: no longer a pain to inject
    assert sum(e.type == "campaign" for e in found.entities) == FALLBACK_ENTITIES
    assert len(found.entities) < len(stored)


async def test_limit_is_a_ceiling_not_a_quota(store: EntityStore) -> None:
    await upsert_batch(store, "u1", [*regional_campaigns(), preference()], "s1")  # type: ignore[arg-type]
    found = await retrieve_for_context(store, "u1", "How is Iberia doing?", limit=20)
    assert found.fallback is None and found.relevant >= 1
    assert [e.name for e in found.entities if e.type == "campaign"] == ["Iberia Search"]
    assert {e.name for e in found.entities} == {"Iberia Search", "Concise weekly summaries"}


async def test_a_campaign_brings_its_metrics_decisions_and_open_pain_points(
    store: EntityStore,
) -> None:
    bare = {"kpi": "CTR", "value": 3.0, "campaign": "Campaign Alpha"}
    await upsert_batch(
        store,
        "u1",
        [
            campaign(),
            *regional_campaigns(),
            metric(name="Click rate", content="3%", metadata=bare),
            decision(name="Widen match types", content="broad match on two ad groups"),
            pain_point(),
        ],  # type: ignore[list-item]
        "s1",
    )
    found = await retrieve_for_context(store, "u1", "Review Campaign Alpha")
    linked = {s.name: s.linked_to for s in found.scores}
    assert "Click rate" in linked  # its `campaign` field names Alpha: relevant on its own
    assert linked["Widen match types"] == "campaign-alpha"  # shares no word with the task
    assert "Conversion tracking gaps" in linked
    assert not any(e.name.endswith("Search") for e in found.entities)
    assert found.links[("metric", "click-rate")] == ["campaign-alpha"]


async def test_the_campaign_the_tasks_entities_belong_to_comes_with_them(
    store: EntityStore,
) -> None:
    """A task that calls a campaign by other words finds its metrics; the campaign they are
    linked to comes along, without bringing its own companions."""
    owner = {"campaign": "Northwind Bikes"}
    gravel = [
        metric(name="Gravel cost per order", content="", metadata={"kpi": "CPA", **owner}),
        metric(name="Cargo CTR", content="", metadata={"kpi": "CTR", **owner}),
    ]
    other = decision(name="Widen match types", content=NOTE, metadata={"action": "widen"})
    other.metadata.affected_entities = ["Northwind Bikes"]  # type: ignore[attr-defined]
    stored = [campaign(name="Northwind Bikes", content="bikes"), *regional_campaigns(), other]
    await upsert_batch(store, "u1", [*stored, *gravel], "s1")  # type: ignore[list-item]
    found = await retrieve_for_context(store, "u1", "How are the gravel and cargo numbers?")
    names = [e.name for e in found.entities]
    assert {"Gravel cost per order", "Cargo CTR", "Northwind Bikes"} <= set(names)
    assert "Widen match types" not in names
    one = await retrieve_for_context(store, "u1", "Cargo CTR this week?")
    assert "Northwind Bikes" not in [e.name for e in one.entities]  # one entity is no evidence


async def test_one_entity_brings_its_campaign_when_the_task_says_part_of_its_name(
    store: EntityStore,
) -> None:
    """The task's words touch the campaign itself (too little to pass the floor) and one of
    the task's entities is linked to it: that is the campaign the task is about."""
    owner = {"campaign": "Northwind Bikes Search"}
    cargo = metric(name="Cargo cost per order", content="", metadata={"kpi": "CPA", **owner})
    stored = [campaign(name="Northwind Bikes Search", content="bikes"), *regional_campaigns()]
    await upsert_batch(store, "u1", [*stored, cargo], "s1")  # type: ignore[list-item]
    task = "Cargo orders on the northwind ads cost too much per order this week, what now?"
    found = await retrieve_for_context(store, "u1", task)
    assert {"Cargo cost per order", "Northwind Bikes Search"} <= {e.name for e in found.entities}
    scores = {s.name: s for s in found.scores}
    assert scores["Northwind Bikes Search"].relevance < RELEVANCE_FLOOR  # came as the owner
    unrelated = await retrieve_for_context(store, "u1", "Cargo cost per order this week?")
    assert "Northwind Bikes Search" not in {e.name for e in unrelated.entities}


async def test_owner_campaigns_never_push_out_the_entities_that_brought_them(
    store: EntityStore,
) -> None:
    both = ["Cedar Search", "Dune Search"]
    pacing = [
        decision(name=f"Rebalance {when} pacing", content=NOTE, metadata={"action": "rebalance"})
        for when in ("weekend", "evening")
    ]
    for d in pacing:
        d.metadata.affected_entities = list(both)  # type: ignore[attr-defined]
    loose = metric(name="Pacing share", content="", metadata={"kpi": "pacing share"})
    stored = [campaign(name=n, content="search") for n in both]
    await upsert_batch(store, "u1", [*stored, *pacing, loose, preference()], "s1")  # type: ignore[list-item]
    task = "How did the rebalance of pacing go?"
    rebalances = {"Rebalance weekend pacing", "Rebalance evening pacing"}
    for limit, owners in ((3, 0), (4, 1), (6, 2)):
        names = [e.name for e in (await retrieve_for_context(store, "u1", task, limit)).entities]
        assert len(names) <= limit and rebalances <= set(names), (limit, names)
        assert sum(n in both for n in names) == owners, (limit, names)


async def test_companions_stay_within_the_limit(store: EntityStore) -> None:
    kpis = ("CTR", "CPC", "CPM", "ROAS")
    metrics = [
        metric(name=f"Rate {k}", content="", metadata={"kpi": k, "campaign": "Campaign Alpha"})
        for k in kpis
    ]
    await upsert_batch(store, "u1", [campaign(), *metrics], "s1")  # type: ignore[list-item]
    found = await retrieve_for_context(store, "u1", "Review Campaign Alpha", limit=3)
    assert len(found.entities) == 3
    assert found.entities[0].name == "Campaign Alpha"


async def test_a_campaigns_decisions_come_newest_first_and_of_one_time_the_tasks_own(
    store: EntityStore, clock: Clock
) -> None:
    """Decisions recorded in one session share a time: among them, the one the task is about
    comes along, not whichever was listed first."""
    task = "Review the Campaign Alpha search budget and its keywords before June"
    said = {
        "Pause weekend delivery": NOTE,
        "Add sitelinks": NOTE,
        "Exclude mobile apps": NOTE,
        "Hold spend": f"until June: {NOTE}",  # the task's word, in the content only
    }
    decisions = [decision(name=name, content=content) for name, content in said.items()]
    await upsert_batch(store, "u1", [campaign(), *regional_campaigns()], "s1")  # type: ignore[list-item]
    clock.advance(DAY)
    await upsert_batch(store, "u1", decisions, "s2")
    found = await retrieve_for_context(store, "u1", task)
    linked = [s.name for s in found.scores if s.linked_to == "campaign-alpha"]
    assert "Hold spend" in linked and len(linked) == COMPANIONS["decision"]
    clock.advance(DAY)
    await upsert_batch(store, "u1", [decision(name="Raise bids", content=NOTE)], "s3")
    found = await retrieve_for_context(store, "u1", task)
    linked = [s.name for s in found.scores if s.linked_to == "campaign-alpha"]
    assert "Raise bids" in linked and len(linked) == COMPANIONS["decision"]  # newest first


async def test_an_entity_the_task_names_is_relevant_in_a_tiny_memory(store: EntityStore) -> None:
    """With two entities every word is common, which lowers relevance; a name is a name."""
    bare = campaign(name="Alpha", content="search")
    await upsert_batch(store, "u1", [bare, metric(name="Alpha CPA")], "s1")  # type: ignore[list-item]
    found = await retrieve_for_context(store, "u1", "Alpha CPA")
    assert {e.name for e in found.entities} == {"Alpha", "Alpha CPA"}
    assert found.fallback is None


async def test_at_a_small_limit_preferences_do_not_crowd_out_the_tasks_entities(
    store: EntityStore,
) -> None:
    prefs = [
        item(type="preference", name=f"Habit {n}", metadata={"category": "reporting", "value": n})
        for n in ("one", "two", "three", "four", "five")
    ]
    pains = [item(type="pain_point", name=f"Worry {n}") for n in ("red", "blue", "green")]
    iberia = [
        metric(name=f"Iberia {kpi}", metadata={"kpi": kpi, "value": 3.0, "campaign": "Iberia"})
        for kpi in ("CPA", "CTR", "ROAS")
    ]
    stored = [*regional_campaigns(), *prefs, *pains, *iberia]
    await upsert_batch(store, "u1", stored, "s1")  # type: ignore[arg-type]
    found = await retrieve_for_context(store, "u1", "Should Iberia get more budget?", limit=6)
    names = [e.name for e in found.entities]
    assert len(names) == 6
    assert {"Iberia Search", "Iberia CPA", "Iberia CTR", "Iberia ROAS"} <= set(names)
    injected = [e.type for e in found.entities if e.type in ("preference", "pain_point")]
    assert sorted(injected) == ["pain_point", "preference"]  # some of each type


async def test_an_entity_that_only_means_the_task_is_admitted_when_it_stands_out(
    store: EntityStore, clock: Clock
) -> None:
    """Semantic similarity is min-max rescaled, so some entity is always "closest"; only one
    standing well above the user's others is about the task without sharing a word with it."""
    hobbies = [decision(name=f"{region} weekend plan", content=NOTE) for region in REGIONS]
    quiet = decision(name="Signed up for pottery", content="a class on Tuesdays")
    await upsert_batch(store, "u1", [*hobbies, quiet], "s1")
    entries = (await store.read_index("u1")).entries
    task = "What does she do to unwind? Any Nordics weekend plan?"
    position = [e.name for e in entries].index("Signed up for pottery")
    flat = [0.5 + 0.01 * i for i in range(len(entries))]
    standing_out = [0.9 if i == position else 0.1 + 0.01 * i for i in range(len(entries))]
    for similarity, admitted in ((flat, False), (standing_out, True)):
        sig = signals(entries, task, clock(), rescale(similarity))
        chosen = {s.name for s in choose(sig, 10).scores}
        assert "Nordics weekend plan" in chosen
        assert ("Signed up for pottery" in chosen) is admitted


def test_standouts_are_few_and_never_replace_the_fallback(clock: Clock) -> None:
    """In a large memory a few percent of entries stand 2 deviations out by chance: a task
    about nothing stored still falls back, and one about the memory gains at most a few."""
    entries = [
        IndexEntry(
            id=f"d{i}",
            type="decision",
            name=f"Note {i}",
            importance=0.5,
            updated_at=clock(),
            keywords=["note", str(i)],
            name_terms=2,
        )
        for i in range(1000)
    ]
    rng = random.Random(3)
    similarity = rescale([rng.gauss(0.3, 0.05) for _ in entries])
    unrelated = choose(signals(entries, "What is the weather on Mars?", clock(), similarity), 20)
    assert unrelated.fallback == FALLBACK_REASON and unrelated.relevant == 0
    named = choose(signals(entries, "Reread note 7", clock(), similarity), 20)
    assert named.fallback is None
    assert named.relevant <= 1 + STANDOUT_MAX  # note 7, and the few closest


def test_an_older_entry_without_name_terms_is_named_only_by_its_name(clock: Clock) -> None:
    """Entries written before `nameTerms` existed: the one-link owner rule still needs a word
    of the campaign's *name* in the task, not any of its keywords."""

    def entry(id: str, type: str, name: str, keywords: list[str], **kw: object) -> IndexEntry:
        return IndexEntry(
            id=id, type=type, name=name, importance=0.5, updated_at=clock(), keywords=keywords, **kw
        )

    entries = [
        entry("harbor", "campaign", "Harbor Tours", ["harbor", "tour", "sunset", "cruise"]),
        entry(
            "cpa", "metric", "Cruise CPA", ["cruise", "cpa", "mobile", "weekend"], links=["harbor"]
        ),
        *(entry(f"c{i}", "campaign", f"Region {i}", ["region", str(i)]) for i in range(8)),
    ]
    content = signals(entries, "Is the mobile weekend cruise CPA too high?", clock())
    assert content.relevances[0] < RELEVANCE_FLOOR  # "cruise" is the campaign's content
    assert "harbor" not in [s.id for s in choose(content, 10).scores]
    name = signals(entries, "Is the mobile weekend harbor CPA too high?", clock())
    assert name.relevances[0] < RELEVANCE_FLOOR  # "harbor" is its name: it comes as owner
    assert "harbor" in [s.id for s in choose(name, 10).scores]


#: A fix's content: no word of the tasks below.
FIX_NOTE = "agreed after going through the account together"


def _fix(name: str, problem: str) -> object:
    """A decision taken against `problem`, sharing no word with the tasks below (less
    important than the campaigns, so a fallback never picks it on its own)."""
    meta = {"action": name, "affectedEntities": [problem]}
    return decision(name=name, content=FIX_NOTE, importance=0.5, metadata=meta)


async def test_a_pain_point_the_task_is_about_brings_what_was_done_against_it(
    store: EntityStore, clock: Clock
) -> None:
    fills = item(type="pain_point", name="Fake form fills", content="bots posting the contact form")
    other = _fix("Add sitelinks", "Slow landing page")  # addresses another pain point
    await upsert_batch(
        store, "u1", [fills, pain_point(name="Slow landing page"), *regional_campaigns()], "s1"
    )  # type: ignore[list-item]
    await upsert_batch(store, "u1", [_fix("Hide the phone field", "fake form fills"), other], "s2")
    clock.advance(DAY)
    await upsert_batch(store, "u1", [_fix("Add a captcha", "fake form fills")], "s3")
    clock.advance(DAY)
    await upsert_batch(store, "u1", [_fix("Verify emails first", "fake form fills")], "s4")
    found = await retrieve_for_context(store, "u1", "How did we handle the fake form fills?")
    linked = {s.name: s.linked_to for s in found.scores}
    # the most recent two, under the pain point; not the older one, nor another's fix
    assert linked.get("Verify emails first") == "fake-form-fills"
    kinds = {s.name: s.linked_type for s in found.scores}
    assert kinds["Verify emails first"] == "pain_point"
    assert linked.get("Add a captcha") == "fake-form-fills"
    assert "Hide the phone field" not in linked and "Add sitelinks" not in linked
    assert found.addresses["verify-emails-first"] == ["fake-form-fills"]


async def test_an_always_injected_pain_point_brings_no_decisions(store: EntityStore) -> None:
    """Only a pain point the task is about brings its fixes: an unrelated task still gets the
    open pain point (always injected), not what was done about it."""
    fills = item(type="pain_point", name="Fake form fills")
    await upsert_batch(store, "u1", [fills, *regional_campaigns()], "s1")  # type: ignore[list-item]
    await upsert_batch(store, "u1", [_fix("Add a captcha", "fake form fills")], "s2")
    found = await retrieve_for_context(store, "u1", "How is Iberia doing?")
    names = {e.name for e in found.entities}
    assert "Fake form fills" in names and "Add a captcha" not in names


async def test_a_task_about_a_pain_point_with_fixes_is_no_fallback(store: EntityStore) -> None:
    """In a small memory the task's only relevant entity is an always-injected pain point: its
    fixes are what the task is about, so no "important recent" entities are added."""
    fills = item(type="pain_point", name="Fake form fills")
    stored = [campaign(), metric(), fills, _fix("Add a captcha", "fake form fills")]
    await upsert_batch(store, "u1", stored, "s1")  # type: ignore[arg-type]
    found = await retrieve_for_context(store, "u1", "How did we handle the fake form fills?")
    assert found.fallback is None and found.relevant >= 1
    linked = {s.name: (s.linked_to, s.linked_type) for s in found.scores}
    assert linked["Add a captcha"] == ("fake-form-fills", "pain_point")
    assert "Campaign Alpha" not in linked and "Alpha CPA" not in linked


async def test_a_task_asking_for_performance_gets_the_metrics(store: EntityStore) -> None:
    """A report task shares a word with the report preference only; its numbers come too."""
    report = preference("Fortnightly report", content="A report every other Friday.")
    readings = [
        item(
            type="metric",
            name=f"Kiln Class {kpi}",
            content=f"Kiln Class {kpi} last month.",
            metadata={"kpi": kpi, "value": value},
        )
        for kpi, value in [("CPA", 31), ("CTR", 2.2), ("ROAS", 3.4)]
    ]
    await upsert_batch(store, "u1", [report, *readings, decision()], "s1")  # type: ignore[arg-type]
    found = await retrieve_for_context(store, "u1", "Draft the performance report for Ana")
    names = {e.name for e in found.entities}
    assert {"Kiln Class CPA", "Kiln Class CTR", "Kiln Class ROAS"} <= names
    assert found.fallback is None
    plain = await retrieve_for_context(store, "u1", "Draft the report for Ana")
    assert plain.fallback == FALLBACK_REASON  # without the kind's word: a few recent ones
