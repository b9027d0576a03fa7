"""The extraction pipeline around any extractor: validation, resolution, novelty, idempotent
sessions, degraded/pending sessions and their scheduled retry, provenance, and the HTTP
endpoint. The extractor here is a scripted test double of the
`Extractor` interface (what a model or the rules would return), so these tests pin down the
pipeline's behaviour independently of any extractor's quality."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from entity_memory.extraction.base import (
    ChunkFailure,
    ExtractionError,
    ExtractionResult,
    ExtractorUnavailable,
    KnownEntity,
    Message,
    Usage,
)
from entity_memory.extraction.registry import build_extractor
from entity_memory.extraction.resolve import Resolver, fuzzy_same
from entity_memory.extraction.validate import validate_candidates
from entity_memory.http.app import create_app
from entity_memory.http.transcript import transcript_to_messages
from entity_memory.service.bindings import Bindings
from entity_memory.service.extraction.pipeline import SessionExtraction
from entity_memory.service.retry_pending import retry_pending_sessions
from entity_memory.settings import Settings
from entity_memory.storage.d1 import CountingD1
from entity_memory.storage.kv import CountingKV
from entity_memory.storage.ledger import Ledger
from entity_memory.storage.session_log import SessionLog
from entity_memory.storage.store import EntityStore

from .conftest import T0, Clock

#: What the user says about Alpha: every stored candidate must be grounded in the conversation.
ALPHA_SAYS = "Campaign Alpha runs on Manual CPC at $60/day"
ALPHA = {
    "type": "campaign",
    "name": "Campaign Alpha",
    "content": "Alpha runs on Manual CPC at $60/day",
    "importance": 0.7,
    "metadata": {"strategy": "Manual CPC", "budget": 60},
    "source": ALPHA_SAYS,
}


@dataclass
class Scripted:
    """Returns the next scripted candidate list on each call and records what it was given."""

    name: str
    script: list[Any]
    calls: list[tuple[list[Message], list[KnownEntity]]] = field(default_factory=list)
    previous: list[list[Message]] = field(default_factory=list)
    fail: bool = False

    async def extract(
        self,
        messages: list[Message],
        known: list[KnownEntity],
        now_ms: int,
        *,
        previous: Any = (),
    ) -> ExtractionResult:
        self.calls.append((messages, known))
        self.previous.append(list(previous))
        if self.fail:
            raise ExtractionError("backend down")
        step = self.script.pop(0)
        if isinstance(step, ExtractionResult):
            return step
        return ExtractionResult(extractor=self.name, candidates=step, usage=Usage(100, 20))


def factory_for(**extractors: Scripted) -> Callable[[str, Bindings], Scripted]:
    def factory(name: str, bindings: Bindings) -> Scripted:
        if name.replace("-", "_") not in extractors:
            raise ExtractorUnavailable(f"{name}: not configured here")
        return extractors[name.replace("-", "_")]

    return factory


async def go(run: SessionExtraction, *args: Any) -> dict[str, Any]:
    return (await run.run(*args)).to_json_dict()


def msgs(*texts: str) -> list[Message]:
    return [
        Message(role="user" if i % 2 == 0 else "assistant", content=t) for i, t in enumerate(texts)
    ]


@pytest.fixture
def pipeline_parts(kv: CountingKV, clock: Clock, db: CountingD1):
    ledger = Ledger(db)
    store = EntityStore(kv, Settings(), clock, ledger)
    bindings = Bindings(kv=kv, clock=clock, db=db, vars={"EXTRACTOR": "rules"})
    return store, ledger, bindings


def test_validation_drops_unknown_keys_and_rejects_bad_items() -> None:
    accepted, rejected = validate_candidates(
        [
            {
                **ALPHA,
                "confidence_of_model": 0.3,
                "metadata": {**ALPHA["metadata"], "color": "red"},
            },
            {"type": "keyword", "name": "x"},
            "not an object",
            {"type": "metric", "name": "Alpha CPA", "metadata": {"value": 3}},  # kpi missing
            {
                "type": "preference",
                "name": "Tone",
                "importance": 7,
                "metadata": {"category": "communication", "value": "blunt"},
            },
        ]
    )
    assert [a.name for a in accepted] == ["Campaign Alpha", "Tone"]
    assert accepted[1].importance == 1.0
    assert [r["reason"] for r in rejected][:2] == ["unknown type 'keyword'", "not an object"]
    assert "kpi" in rejected[2]["reason"]


def test_fuzzy_resolution_never_crosses_kpis_or_numbers() -> None:
    assert fuzzy_same("Trail Runners", "Trail Runners Search")
    assert fuzzy_same("Trail Runners CPA", "trail runners cost per acquisition")
    assert not fuzzy_same("Alpha CPA", "Alpha CPC")
    assert not fuzzy_same("Campaign 2", "Campaign 3")
    assert not fuzzy_same("Brand Search", "Brand Shopping")


def test_transcript_to_messages() -> None:
    messages = transcript_to_messages("user: hi\nthere\nassistant: hello\nUSER: bye")
    assert [(m.role, m.content) for m in messages] == [
        ("user", "hi\nthere"),
        ("assistant", "hello"),
        ("user", "bye"),
    ]


async def test_session_stores_resolves_and_reports(pipeline_parts, clock: Clock) -> None:
    store, ledger, bindings = pipeline_parts
    rules = Scripted(
        "rules",
        [
            [ALPHA, {"type": "keyword", "name": "x"}],
            [
                {
                    **ALPHA,
                    "name": "alpha",
                    "content": "Alpha moved to target CPA $45",
                    "metadata": {"strategy": "target CPA $45"},
                    "source": "switch alpha to tCPA",
                }
            ],
        ],
    )
    run = SessionExtraction(store, ledger, bindings, factory_for(rules=rules))
    first = await go(run, "u1", "s1", msgs(ALPHA_SAYS), None)
    assert first["processed"] is True and first["extractor"] == "rules"
    assert [(r["id"], r["status"]) for r in first["results"]] == [("campaign-alpha", "created")]
    assert first["rejected"][0]["reason"] == "unknown type 'keyword'"
    assert first["usage"] == {"input_tokens": 100, "output_tokens": 20}

    clock.advance(1000)
    second = await go(run, "u1", "s2", msgs("switch alpha to tCPA"), None)
    # The extractor was told what exists, and "alpha" resolved onto the stored entity.
    assert rules.calls[1][1] == [KnownEntity("campaign", "campaign-alpha", "Campaign Alpha")]
    [result] = second["results"]
    assert (result["id"], result["status"], result["version"]) == ("campaign-alpha", "updated", 2)
    assert second["changes"][0]["changes"]["metadata.strategy"] == {
        "old": "Manual CPC",
        "new": "target CPA $45",
    }
    history = await ledger.history("u1", "campaign", "campaign-alpha")
    assert [h["changeKind"] for h in history] == ["contradicted", "created"]
    assert [e.id for e in await store.list("u1")] == ["campaign-alpha"]


async def test_resending_a_session_writes_nothing(
    pipeline_parts, kv: CountingKV, db: CountingD1
) -> None:
    store, ledger, bindings = pipeline_parts
    rules = Scripted("rules", [[ALPHA], [ALPHA]])
    run = SessionExtraction(store, ledger, bindings, factory_for(rules=rules))
    conversation = msgs(ALPHA_SAYS, "noted")
    await go(run, "u1", "s1", conversation, None)
    kv.ops.clear()
    db.calls = db.statements = 0
    db.by_verb.clear()
    again = await go(run, "u1", "s1", conversation, None)
    assert again["processed"] is False and again["reason"] == "session already processed"
    assert kv.ops.total() == 0 and kv.writes == 0
    assert (db.calls, db.by_verb["INSERT"]) == (1, 0)  # one read of processed_sessions
    assert len(rules.calls) == 1


async def test_a_grown_session_processes_only_new_messages(pipeline_parts) -> None:
    store, ledger, bindings = pipeline_parts
    rules = Scripted("rules", [[ALPHA], []])
    run = SessionExtraction(store, ledger, bindings, factory_for(rules=rules))
    conversation = msgs(ALPHA_SAYS, "noted")
    await go(run, "u1", "s1", conversation, None)
    grown = [*conversation, Message(role="user", content="also pause Bravo")]
    result = await go(run, "u1", "s1", grown, None)
    assert result["processed"] is True and result["counts"]["newMessages"] == 1
    assert [m.content for m in rules.calls[1][0]] == ["also pause Bravo"]
    assert (await go(run, "u1", "s1", grown, None))["processed"] is False


def llm_bindings(pipeline_parts) -> Bindings:
    _, _, bindings = pipeline_parts
    return Bindings(kv=bindings.kv, clock=bindings.clock, db=bindings.db, ai_run=object())  # type: ignore[arg-type]


async def test_llm_failure_is_degraded_and_pending_not_rules(pipeline_parts) -> None:
    store, ledger, _ = pipeline_parts
    bindings = llm_bindings(pipeline_parts)
    llm = Scripted("workers-ai", [], fail=True)
    rules = Scripted("rules", [[ALPHA]])
    run = SessionExtraction(store, ledger, bindings, factory_for(workers_ai=llm, rules=rules))
    result = await go(run, "u1", "s1", msgs(ALPHA_SAYS), None)
    assert result["extractor"] == "workers-ai"
    assert result["degraded"] is True and result["pending"] is True
    assert "backend down" in result["degradedReason"]
    assert result["processed"] is False and result["entities"] == []
    assert rules.calls == []  # never silently downgraded
    pending = await ledger.pending_session("u1", "s1")
    assert pending is not None and pending.ranges == [(0, 1)]
    assert pending.extractor == "workers-ai"


async def test_the_rules_run_when_asked_even_with_an_llm_configured(pipeline_parts) -> None:
    store, ledger, _ = pipeline_parts
    llm = Scripted("workers-ai", [], fail=True)
    rules = Scripted("rules", [[ALPHA]])
    factory = factory_for(workers_ai=llm, rules=rules)
    run = SessionExtraction(store, ledger, llm_bindings(pipeline_parts), factory)
    result = await go(run, "u1", "s1", msgs(ALPHA_SAYS), "rules")
    assert result["extractor"] == "rules" and result["degraded"] is False
    assert result["entities"][0]["extractor"] == "rules"
    assert llm.calls == []


async def test_no_llm_configured_means_rules(pipeline_parts) -> None:
    store, ledger, bindings = pipeline_parts
    bindings = Bindings(kv=bindings.kv, clock=bindings.clock, db=bindings.db)
    rules = Scripted("rules", [[ALPHA]])
    run = SessionExtraction(store, ledger, bindings, factory_for(rules=rules))
    result = await go(run, "u1", "s1", msgs(ALPHA_SAYS), None)
    assert (result["extractor"], result["degraded"], result["processed"]) == ("rules", False, True)


async def test_one_failed_chunk_keeps_the_others_and_the_session_is_retried_later(
    pipeline_parts, clock: Clock
) -> None:
    store, ledger, _ = pipeline_parts
    bindings = llm_bindings(pipeline_parts)
    metric = {
        "type": "metric",
        "name": "Alpha CPA",
        "content": "Alpha CPA is $36; goal $30.",
        "importance": 0.9,
        "metadata": {"kpi": "CPA", "value": 36, "target": 30, "campaign": "Campaign Alpha"},
        "source": "CPA is $36, we want it under $30",
    }
    partial = ExtractionResult(
        extractor="workers-ai",
        candidates=[ALPHA],
        failures=[ChunkFailure(2, 4, "workers_ai: 3040 out of capacity (gave up)")],
    )
    llm = Scripted("workers-ai", [partial, [metric]])
    run = SessionExtraction(store, ledger, bindings, factory_for(workers_ai=llm))
    talk = msgs(ALPHA_SAYS, "ok", "CPA is $36, we want it under $30", "noted")
    first = await go(run, "u1", "s1", talk, None)
    assert [e["name"] for e in first["entities"]] == ["Campaign Alpha"]  # kept
    assert first["pending"] is True and first["degraded"] is True
    assert first["counts"]["pendingMessages"] == 2

    # The scheduled handler retries only the pending messages, the rest as read-only context.
    clock.advance(60 * 60 * 1000)
    outcome = await retry_pending_sessions(store, ledger, bindings, factory_for(workers_ai=llm))
    assert outcome["due"] == 1 and outcome["sessions"][0]["processed"] is True
    assert [m.content for m in llm.calls[1][0]] == [m.content for m in talk[2:4]]
    assert [m.content for m in llm.previous[1]] == [m.content for m in talk[:2]]
    assert await ledger.pending_session("u1", "s1") is None
    stored = await store.get("u1", "metric", "alpha-cpa")
    assert stored is not None
    meta = stored.metadata  # type: ignore[attr-defined]
    assert (meta.value, meta.target) == (36, 30)
    assert [h.value for h in meta.history] == [36]  # the target is no observation
    [prov] = stored.provenance
    assert (prov.excerpt, prov.session_id, prov.extractor) == (
        "CPA is $36, we want it under $30",
        "s1",
        "workers-ai",
    )
    # Nothing is due any more; a re-send is a no-op.
    assert (await retry_pending_sessions(store, ledger, bindings))["due"] == 0
    again = await go(run, "u1", "s1", talk, None)
    assert again["processed"] is False and again["pending"] is False


async def test_a_pending_session_is_not_due_before_its_backoff(
    pipeline_parts, clock: Clock
) -> None:
    store, ledger, _ = pipeline_parts
    bindings = llm_bindings(pipeline_parts)
    llm = Scripted("workers-ai", [], fail=True)
    run = SessionExtraction(store, ledger, bindings, factory_for(workers_ai=llm))
    await go(run, "u1", "s1", msgs(ALPHA_SAYS), None)
    assert (await retry_pending_sessions(store, ledger, bindings))["due"] == 0
    clock.advance(10 * 60 * 1000)
    outcome = await retry_pending_sessions(store, ledger, bindings, factory_for(workers_ai=llm))
    assert outcome["sessions"][0]["pending"] is True  # failed again: rescheduled
    pending = await ledger.pending_session("u1", "s1")
    assert pending is not None and pending.attempts == 2


async def test_provenance_accumulates_and_content_is_replaced(pipeline_parts, clock: Clock) -> None:
    store, ledger, bindings = pipeline_parts
    rules = Scripted(
        "rules",
        [
            [{**ALPHA, "source": "Alpha runs on Manual CPC at $60/day"}],
            [
                {
                    **ALPHA,
                    "content": "Alpha now on target CPA $45 at $60/day",
                    "metadata": {"strategy": "target CPA $45"},
                    "source": "moved Alpha to target CPA $45",
                }
            ],
        ],
    )
    run = SessionExtraction(store, ledger, bindings, factory_for(rules=rules))
    await go(run, "u1", "s1", msgs("Alpha runs on Manual CPC at $60/day"), None)
    clock.advance(1000)
    second = await go(run, "u1", "s2", msgs("I moved Alpha to target CPA $45"), None)
    entity = second["entities"][0]
    assert entity["content"] == "Alpha now on target CPA $45 at $60/day"
    assert [(p["excerpt"], p["sessionId"], p["extractor"]) for p in entity["provenance"]] == [
        ("Alpha runs on Manual CPC at $60/day", "s1", "rules"),
        ("moved Alpha to target CPA $45", "s2", "rules"),
    ]
    assert entity["extractor"] == "rules"
    # The ledger's history holds the same entity JSON, provenance included.
    [latest, _] = await ledger.history("u1", "campaign", "campaign-alpha")
    assert latest["entity"]["provenance"] == entity["provenance"]


async def test_repeated_facts_lose_importance(pipeline_parts) -> None:
    store, ledger, bindings = pipeline_parts
    rules = Scripted(
        "rules",
        [
            [{**ALPHA, "importance": 0.8}],
            [{**ALPHA, "importance": 0.8, "content": "Manual CPC at $60/day"}],
        ],
    )
    run = SessionExtraction(store, ledger, bindings, factory_for(rules=rules))
    await go(run, "u1", "s1", msgs(ALPHA_SAYS), None)
    second = await go(run, "u1", "s2", msgs(ALPHA_SAYS), None)
    # Nothing new: 0.8 - 0.15 = 0.65, then averaged with the stored 0.8.
    assert second["entities"][0]["importance"] == pytest.approx((0.65 + 0.8) / 2)


def test_resolver_within_one_batch() -> None:
    resolver = Resolver([])
    resolver.resolve(validate_candidates([ALPHA])[0][0])
    b, _ = resolver.resolve(validate_candidates([{**ALPHA, "name": "Alpha campaign"}])[0][0])
    assert b.id == "campaign-alpha" and b.name == "Campaign Alpha"
    assert b.aliases == ["Alpha campaign"]


def api_client(
    kv: CountingKV, db: CountingD1, clock: Clock, rules: Scripted, **settings: Any
) -> httpx.AsyncClient:
    bindings = Bindings(kv=kv, db=db, clock=clock, settings=Settings(**settings))
    app = create_app(lambda env: bindings, factory_for(rules=rules))
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")


async def test_extract_endpoint_shapes_and_errors(
    kv: CountingKV, db: CountingD1, clock: Clock
) -> None:
    rules = Scripted("rules", [[ALPHA], [ALPHA]])
    async with api_client(kv, db, clock, rules) as c:
        r = await c.post(
            "/v1/users/u1/sessions/s1/extract",
            json={"messages": [{"role": "user", "content": "Campaign Alpha"}]},
        )
        assert r.status_code == 200, r.text
        body = r.json()
        assert set(body) >= {"entities", "results", "changes", "rejected", "extractor", "processed"}
        r = await c.post(
            "/v1/users/u1/sessions/s2/extract",
            content="user: Campaign Alpha",
            headers={"content-type": "text/plain"},
        )
        assert r.status_code == 200 and r.json()["processed"] is True
        for payload, status, code in [
            ({"messages": []}, 422, "empty_conversation"),
            ({"messages": [{"role": "user", "content": "  "}]}, 422, "empty_conversation"),
            ({"messages": [{"role": "robot", "content": "x"}]}, 422, "invalid_request"),
            ({"transcript": "x", "extractor": "magic"}, 400, "invalid_extractor"),
            ({"transcript": "x", "extractor": "workers-ai"}, 400, "extractor_unavailable"),
        ]:
            r = await c.post("/v1/users/u1/sessions/s3/extract", json=payload)
            assert (r.status_code, r.json()["error"]["code"]) == (status, code), r.text
        r = await c.post("/v1/users/u1/sessions/a:b/extract", json={"transcript": "x"})
        assert (r.status_code, r.json()["error"]["code"]) == (400, "invalid_id")


async def test_clock_override_only_when_allowed(
    kv: CountingKV, db: CountingD1, clock: Clock
) -> None:
    when = "2026-05-26T15:00:00Z"
    expected = 1779807600000
    for allowed, stamp in ((True, expected), (False, T0)):
        rules = Scripted("rules", [[{**ALPHA, "name": f"C {allowed}"}]])
        async with api_client(kv, db, clock, rules, allow_clock_override=allowed) as c:
            r = await c.post(
                f"/v1/users/u{int(allowed)}/sessions/s1/extract",
                json={"transcript": f"user: {ALPHA_SAYS} (C {allowed})"},
                headers={"X-Entity-Memory-Now": when},
            )
            assert r.json()["entities"][0]["createdAt"] == stamp
    async with api_client(kv, db, clock, Scripted("rules", []), allow_clock_override=True) as c:
        r = await c.get("/v1/users/u1/entities", headers={"X-Entity-Memory-Now": "soon"})
        assert (r.status_code, r.json()["error"]["code"]) == (400, "invalid_clock")


async def test_put_accepts_typed_entities_with_provenance_and_reads_show_it(
    kv: CountingKV, db: CountingD1, clock: Clock
) -> None:
    """The agent's own model as extractor: `remember` / PUT with a source or full provenance."""
    metric = {
        "type": "metric",
        "name": "Kiln Classes CPA",
        "content": "Kiln Classes CPA is $22 against a $18 goal.",
        "metadata": {"kpi": "CPA", "value": 22, "target": 18, "observedOn": "2026-05-20"},
        "provenance": [{"excerpt": "kiln classes cost $22 a booking, want $18"}],
    }
    preference = {
        "type": "preference",
        "name": "Report day",
        "metadata": {"category": "reporting", "value": "Mondays"},
        "source": "send the numbers on Mondays",
    }
    async with api_client(kv, db, clock, Scripted("rules", [])) as c:
        r = await c.put(
            "/v1/users/u1/entities", json={"session_id": "s9", "entities": [metric, preference]}
        )
        assert r.status_code == 200, r.text
        got = (await c.get("/v1/users/u1/entities/metric/kiln-classes-cpa")).json()
        body = got.get("entity", got)
        assert body["provenance"] == [
            {
                "excerpt": "kiln classes cost $22 a booking, want $18",
                "sessionId": "s9",
                "at": T0,
                "extractor": None,
            }
        ]
        assert body["extractor"] == "api"
        assert body["metadata"]["target"] == 18 and body["metadata"]["value"] == 22
        assert body["metadata"]["history"] == [
            {"value": 22.0, "at": T0, "sessionId": "s9", "observedOn": "2026-05-20"}
        ]
        history = (await c.get("/v1/users/u1/entities/preference/report-day/history")).json()
        assert history["versions"][0]["entity"]["provenance"][0]["excerpt"] == (
            "send the numbers on Mondays"
        )
        export = (await c.get("/v1/users/u1/export")).json()
        assert all(e["provenance"] for e in export["entities"])


def test_extractor_settings_are_parsed_once_with_defaults_and_loud_errors() -> None:
    from entity_memory.settings import DEFAULT_AI_MODEL, DEFAULT_LLM_MAX_TOKENS, ExtractorSettings

    default = ExtractorSettings.from_vars({})
    assert (default.extractor, default.ai_model) == ("auto", DEFAULT_AI_MODEL)
    assert default.llm_temperature is None and default.llm_max_tokens == DEFAULT_LLM_MAX_TOKENS
    custom = ExtractorSettings.from_vars(
        {
            "EXTRACTOR": "OpenAI",
            "LLM_BASE_URL": " http://127.0.0.1:8080/v1 ",
            "LLM_TEMPERATURE": "0.3",
            "LLM_MAX_TOKENS": "2048",
            "LLM_CONTEXT_TOKENS": "32768",
            "AI_TIMEOUT_S": "12.5",
        }
    )
    assert custom.extractor == "openai" and custom.llm_base_url == "http://127.0.0.1:8080/v1"
    assert (custom.llm_temperature, custom.llm_max_tokens) == (0.3, 2048)
    assert (custom.llm_context_tokens, custom.ai_timeout_s) == (32768, 12.5)
    for bad in (
        {"EXTRACTOR": "magic"},
        {"LLM_TEMPERATURE": "warm"},
        {"LLM_TEMPERATURE": "5"},
        {"LLM_MAX_TOKENS": "0"},
        {"AI_TIMEOUT_S": "-1"},
        {"LLM_TIMEOUT_S": "inf"},
    ):
        with pytest.raises(ValueError):
            ExtractorSettings.from_vars(bad)


async def test_a_bad_extractor_var_is_a_clear_error(pipeline_parts) -> None:
    from entity_memory.service.extraction.request_errors import ExtractionRequestError

    store, ledger, bindings = pipeline_parts
    bad = Bindings(kv=bindings.kv, clock=bindings.clock, vars={"LLM_MAX_TOKENS": "lots"})
    run = SessionExtraction(store, ledger, bad, factory_for())
    with pytest.raises(ExtractionRequestError) as info:
        await run.run("u1", "s1", msgs("x"), None)
    assert info.value.code == "extractor_misconfigured"


def test_auto_prefers_a_configured_server_then_workers_ai_then_rules(kv: CountingKV) -> None:
    from entity_memory.extraction.registry import configured_extractor

    async def post(*args: Any) -> tuple[int, str]:
        return 200, ""

    server = Bindings(kv=kv, http_post=post, vars={"LLM_BASE_URL": "http://x/v1"})
    assert configured_extractor(server) == "openai"
    assert configured_extractor(Bindings(kv=kv, ai_run=post)) == "workers-ai"  # type: ignore[arg-type]
    assert configured_extractor(Bindings(kv=kv)) == "rules"
    pinned = Bindings(kv=kv, ai_run=post, vars={"EXTRACTOR": "rules"})  # type: ignore[arg-type]
    assert configured_extractor(pinned) == "rules"


def test_a_target_never_overwrites_a_value_and_is_no_observation() -> None:
    from entity_memory.domain.merge import merge

    [first, goal_only] = validate_candidates(
        [
            {
                "type": "metric",
                "name": "Alpha ROAS",
                "metadata": {"kpi": "ROAS", "value": 3.1, "campaign": "Campaign Alpha"},
            },
            {"type": "metric", "name": "Alpha ROAS", "metadata": {"kpi": "ROAS", "target": 4.0}},
        ]
    )[0]
    created = merge(None, first, "u1", "s1", T0).entity
    updated = merge(created, goal_only, "u1", "s2", T0 + 1).entity
    meta = updated.metadata  # type: ignore[attr-defined]
    assert (meta.value, meta.target) == (3.1, 4.0)
    assert [h.value for h in meta.history] == [3.1]


async def test_a_strategys_new_figure_in_a_later_session_is_the_stored_metrics_target(
    pipeline_parts, clock: Clock
) -> None:
    store, ledger, bindings = pipeline_parts
    run = SessionExtraction(store, ledger, bindings, build_extractor)
    await go(run, "u1", "s1", msgs("Campaign Croissant CPA is $46 against the $49 target."), None)
    clock.advance(86_400_000)
    await go(run, "u1", "s2", msgs("ok, done: Campaign Croissant tCPA is now $44."), None)
    [entry] = [e for e in await store.list("u1") if e.type == "metric"]
    metric = await store.get("u1", "metric", entry.id)
    meta = metric.metadata  # type: ignore[union-attr]
    assert (meta.value, meta.target) == (46, 44)
    assert [h.value for h in meta.history] == [46]  # a target is no observation


async def test_a_resend_retries_the_pending_messages_and_processes_new_ones(
    pipeline_parts,
) -> None:
    store, ledger, _ = pipeline_parts
    bindings = llm_bindings(pipeline_parts)
    first = ExtractionResult(
        extractor="workers-ai", failures=[ChunkFailure(0, 1, "workers_ai: timeout")]
    )
    llm = Scripted("workers-ai", [first, [ALPHA], []])
    run = SessionExtraction(store, ledger, bindings, factory_for(workers_ai=llm))
    talk = msgs(ALPHA_SAYS)
    assert (await go(run, "u1", "s1", talk, None))["pending"] is True
    grown = [*talk, Message(role="assistant", content="noted")]
    again = await go(run, "u1", "s1", grown, None)
    # The owed message, then the new one, each with what came before as context.
    assert [[m.content for m in c[0]] for c in llm.calls[1:]] == [[talk[0].content], ["noted"]]
    assert [len(p) for p in llm.previous[1:]] == [0, 1]
    assert again["processed"] is True and again["pending"] is False
    assert [e["name"] for e in again["entities"]] == ["Campaign Alpha"]
    assert await ledger.pending_session("u1", "s1") is None


async def test_without_a_ledger_a_failure_is_degraded_but_cannot_be_pending(
    pipeline_parts,
) -> None:
    store, _, _ = pipeline_parts
    llm = Scripted("workers-ai", [], fail=True)
    run = SessionExtraction(store, None, llm_bindings(pipeline_parts), factory_for(workers_ai=llm))
    result = await go(run, "u1", "s1", msgs(ALPHA_SAYS), None)
    assert (result["degraded"], result["pending"], result["processed"]) == (True, False, False)
    assert "send the session again" in result["degradedReason"]


async def test_ungrounded_candidates_are_rejected_with_the_reason_and_never_stored(
    pipeline_parts,
) -> None:
    store, ledger, bindings = pipeline_parts
    invented = {**ALPHA, "name": "Campaign Zulu", "source": "Campaign Zulu is great"}
    wrong_number = {**ALPHA, "metadata": {"budget": 90}}
    spent_as_cpa = {
        "type": "metric",
        "name": "Alpha CPA",
        "content": "Alpha spent $196",
        "metadata": {"kpi": "CPA", "value": 196},
        "source": "Alpha spent $196 last week, CPA $40",
    }
    rules = Scripted("rules", [[ALPHA, invented, wrong_number, spent_as_cpa]])
    run = SessionExtraction(store, ledger, bindings, factory_for(rules=rules))
    talk = msgs(ALPHA_SAYS, "ok", "Alpha spent $196 last week, CPA $40")
    result = await go(run, "u1", "s1", talk, None)
    # The unstated budget is dropped, not the campaign it was said of.
    assert {r["id"] for r in result["results"]} == {"campaign-alpha"}
    codes = sorted(r["code"] for r in result["rejected"])
    assert codes == ["no_number_left", "source_not_in_conversation"]
    assert all(r["reason"].startswith("ungrounded:") for r in result["rejected"])
    dropped = sorted((d["name"], d["field"], d["code"]) for d in result["dropped"])
    assert dropped == [
        ("Alpha CPA", "metadata.value", "value_tied_to_other_kpi"),
        ("Campaign Alpha", "metadata.budget", "number_not_in_conversation"),
    ]
    assert (result["counts"]["rejected"], result["counts"]["droppedFields"]) == (2, 2)
    assert [e.id for e in await store.list("u1")] == ["campaign-alpha"]
    alpha = await store.get("u1", "campaign", "campaign-alpha")
    assert alpha is not None and alpha.metadata.budget == 60  # type: ignore[attr-defined]
    # The ledger keeps them per session, typed, for the inspector's session view.
    kept = await SessionLog(ledger.db).rejections("u1", "s1")
    assert sorted(r.code or "" for r in kept) == codes
    assert {r.extractor for r in kept} == {"rules"} and all(r.reason for r in kept)
    assert {r.name for r in kept} == {"Campaign Zulu", "Alpha CPA"}
