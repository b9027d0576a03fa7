"""Extraction end to end: dev scenarios replayed through the real host with the rules extractor,
and the LLM path (retries, pending sessions, the cron retry) against a local replay server.

Each scenario's sessions are extracted in order at their own dates, then the stored entities
and the ledger are checked for behaviours that must hold whatever the extractor's recall: every
stored entity validates, no name is malformed, no metric stores a stated target as its value,
upsert does not duplicate, and every response says which extractor ran. Recall and precision are
reported by `python -m bench.bench_extraction`, not asserted here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from bench import eval_scoring as score
from bench.quality import malformed_name, stated_targets
from bench.replay import EVAL_DIR, load_scenarios, replay

from entity_memory.domain.models import parse_entity
from tests.unit.llm_replay_server import ReplayServer, completion, error

from .hostproc import Host, start_host

pytestmark = pytest.mark.e2e

SCENARIOS = load_scenarios()
#: The dev set lives beside the repository, not in it: a clone elsewhere runs the rest of this
#: file and skips what replays the scenarios (CI, where the folder is laid, runs them).
NO_DEV_SET = f"no dev scenarios in {EVAL_DIR} (the dev set beside the repository)"


@pytest.fixture(scope="module")
def runs(host: Host) -> dict[str, Any]:
    if not SCENARIOS:
        pytest.skip(NO_DEV_SET)
    with httpx.Client(base_url=host.base_url, timeout=120) as client:
        return {sc["scenario"]: replay(client, sc, "rules") for sc in SCENARIOS}


@pytest.mark.parametrize(
    "scenario",
    [sc["scenario"] for sc in SCENARIOS] or [pytest.param("", marks=pytest.mark.skip(NO_DEV_SET))],
)
def test_stored_entities_are_well_formed_and_not_duplicated(
    runs: dict[str, Any], scenario: str
) -> None:
    run = runs[scenario]
    assert run.stored, "explicit statements in the scenario are stored"
    for entity in run.stored:
        parse_entity(entity)
        assert malformed_name(entity["name"]) is None, entity["name"]
        if entity["type"] == "metric":
            # Its own evidence does not state the value as a target.
            evidence = "\n".join(p["excerpt"] for p in entity["provenance"])
            assert entity["metadata"].get("value") not in stated_targets(evidence), entity
    # Upsert never stores one real-world entity under two names it can recognise. A gold row
    # named by a bare KPI ("cost/demo") matches every campaign's metric of that KPI: those are
    # different things, told apart by the campaign they measure.
    rows = run.scenario["expect_final"]
    for row, matched in zip(rows, score.matched_rows(run.stored, rows), strict=True):
        things = [_measures(run.stored[i]) for i in matched]
        assert len(things) == len(set(things)), (row["name"], things)
    # Every extraction said which extractor ran; offline that is the rules.
    assert {r["extractor"] for r in run.responses} == {"rules"}


def _measures(entity: dict[str, Any]) -> str | None:
    """What a stored entity is about beyond its row: a metric's campaign (None otherwise)."""
    return entity["metadata"].get("campaign") if entity["type"] == "metric" else None


def test_a_changed_campaign_keeps_its_history(runs: dict[str, Any]) -> None:
    """A campaign restated with a new budget or strategy is one entity with versions."""
    versions = [
        h["version"] for run in runs.values() for h in run.history if h["type"] == "campaign"
    ]
    assert versions and max(versions) > 1


def test_resending_a_processed_session_writes_nothing(host: Host) -> None:
    session = {
        "session_id": "s-resend",
        "messages": [{"role": "user", "content": "Campaign Harbor budget is $35/day."}],
    }
    with httpx.Client(base_url=host.base_url, timeout=120) as c:
        url = f"/v1/users/e2e-resend/sessions/{session['session_id']}/extract?wait=true"
        first = c.post(url, json={"messages": session["messages"]})
        assert first.status_code == 200 and first.json()["processed"] is True
        assert first.json()["results"], "the first send stores entities"
        again = c.post(url, json={"messages": session["messages"]})
        body = again.json()
        assert body["processed"] is False and body["reason"] == "session already processed"
        # Found among the writer's jobs: neither KV nor D1 is read again.
        assert again.headers["x-kv-operations"] == "none"
        assert again.headers["x-d1-statements"] == "calls=0,statements=0"
        rows = host.d1("SELECT COUNT(*) AS n FROM processed_sessions WHERE user_id = 'e2e-resend'")
        assert rows == [{"n": 1}]


def test_empty_and_oversized_conversations(host: Host) -> None:
    with httpx.Client(base_url=host.base_url, timeout=120) as c:
        r = c.post("/v1/users/e2e-x/sessions/s1/extract?wait=true", json={"messages": []})
        assert (r.status_code, r.json()["error"]["code"]) == (422, "empty_conversation")
        big = [{"role": "user", "content": "x" * 90_000}] * 12
        r = c.post("/v1/users/e2e-x/sessions/s1/extract?wait=true", json={"messages": big})
        assert (r.status_code, r.json()["error"]["code"]) == (413, "too_large")


# --- the LLM path through the real Worker code (Pyodide, the Workers fetch), against a local
# OpenAI-compatible replay server: protocol only, no model --------------------------------------

LLM_REPLY = {
    "entities": [
        {
            "type": "metric",
            "name": "Kiln Classes CPA",
            "content": "Kiln Classes cost $22 a booking; goal $18.",
            "importance": 0.9,
            "metadata": {"kpi": "CPA", "value": 22, "target": 18, "campaign": "Kiln Classes"},
            "source": "kiln classes cost $22 a booking, we want $18",
        }
    ]
}
LLM_TALK = [{"role": "user", "content": "kiln classes cost $22 a booking, we want $18"}]


@pytest.fixture(scope="module")
def llm_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Host, ReplayServer]]:
    replay_server = ReplayServer().start()
    persist_dir = tmp_path_factory.mktemp("wrangler-llm") / "v3"
    args = [
        "--var",
        "ALLOW_CLOCK_OVERRIDE=1",
        "--var",
        f"LLM_BASE_URL={replay_server.base_url}",
        "--var",
        "LLM_MODEL=replay-model",
        "--var",
        "LLM_ATTEMPTS=2",
    ]
    try:
        with start_host(persist_dir, args) as running:
            yield running, replay_server
    finally:
        replay_server.stop()


def test_llm_429_then_success_through_the_worker(llm_host: tuple[Host, ReplayServer]) -> None:
    host, server = llm_host
    server.reset()
    limited = error(429, "slow down", type_="requests")
    limited.headers["Retry-After"] = "0"
    server.queue(limited, completion(json.dumps(LLM_REPLY)))
    with httpx.Client(base_url=host.base_url, timeout=120) as c:
        r = c.post("/v1/users/e2e-llm/sessions/s1/extract?wait=true", json={"messages": LLM_TALK})
    body = r.json()
    assert r.status_code == 200, body
    assert (body["extractor"], body["processed"], body["degraded"]) == ("openai", True, False)
    assert len(server.requests) == 2
    [entity] = body["entities"]
    assert entity["metadata"]["value"] == 22 and entity["metadata"]["target"] == 18
    assert entity["provenance"][0]["extractor"] == "openai"
    sent = server.requests[0].json
    assert sent["model"] == "replay-model" and "temperature" not in sent


def test_llm_failure_is_pending_and_the_cron_retries_it(
    llm_host: tuple[Host, ReplayServer],
) -> None:
    host, server = llm_host
    server.reset()
    server.queue(*[error(503, "overloaded", type_="server_error")] * 2)
    with httpx.Client(base_url=host.base_url, timeout=120) as c:
        # A session dated in the past, so its retry is already due when the cron runs.
        r = c.post(
            "/v1/users/e2e-llm/sessions/s2/extract?wait=true",
            json={"messages": LLM_TALK},
            headers={"X-Entity-Memory-Now": "2026-01-05T10:00:00Z"},
        )
        body = r.json()
        assert (body["degraded"], body["pending"], body["processed"]) == (True, True, False)
        assert "HTTP 503" in body["degradedReason"]
        rows = host.d1("SELECT ranges FROM pending_sessions WHERE session_id = 's2'")
        assert rows == [{"ranges": "[[0, 1]]"}]

        server.queue(completion(json.dumps(LLM_REPLY)))
        assert c.get("/__scheduled").status_code == 200
    assert host.d1("SELECT COUNT(*) AS n FROM pending_sessions WHERE session_id = 's2'") == [
        {"n": 0}
    ]
    sent = json.loads(server.requests[-1].json["messages"][1]["content"])
    assert sent["sessionDate"] == "2026-01-05"


def test_a_name_the_model_chose_over_a_shown_one_stays_its_own_on_the_host(
    llm_host: tuple[Host, ReplayServer],
) -> None:
    """Resolution by meaning, with the host's local embedding model: the model is shown every
    open pain point by name, so a pain point it reports under another name is another one,
    however close in meaning, and the stored one keeps its content (the semantic merge of a
    name it was not shown is tested in tests/unit/test_semantic.py)."""
    host, server = llm_host
    server.reset()
    stored = [
        ("Slow reporting", "building the weekly report takes most of Monday"),
        ("Broken conversion tracking", "purchases stopped showing up in the ad platform"),
        ("Creative fatigue", "the same banners have run for months and clicks fell"),
        ("Approval delays", "legal takes two weeks to approve new ad copy"),
        ("Feed errors", "products get disapproved because of missing prices"),
    ]
    said = "putting the weekly performance report together eats our whole Monday"
    reply = {
        "entities": [
            {
                "type": "pain_point",
                "name": "Reports take forever",
                "content": said,
                "importance": 0.6,
                "metadata": {"severity": "medium"},
                "source": said,
            }
        ]
    }
    server.queue(completion(json.dumps(reply)))
    with httpx.Client(base_url=host.base_url, timeout=120) as c:
        entities = [
            {"type": "pain_point", "name": n, "content": t, "importance": 0.5} for n, t in stored
        ]
        r = c.put("/v1/users/e2e-merge/entities", json={"session_id": "s0", "entities": entities})
        assert r.status_code == 200, r.text
        r = c.post(
            "/v1/users/e2e-merge/sessions/s1/extract?wait=true",
            json={"messages": [{"role": "user", "content": said}]},
        )
        body = r.json()
        assert r.status_code == 200, body
        sent = json.loads(server.requests[-1].json["messages"][1]["content"])
        shown = {k["name"] for k in sent["knownEntities"] if k["type"] == "pain_point"}
        assert shown == {n for n, _ in stored}
        assert [res["id"] for res in body["results"]] == ["reports-take-forever"], body
        kept = c.get("/v1/users/e2e-merge/entities/pain_point/slow-reporting").json()
        assert kept["content"] == stored[0][1] and kept["version"] == 1
        assert c.get("/v1/users/e2e-merge/entities").json()["count"] == len(stored) + 1
