"""The LLM path end to end on a capable model's recorded replies, with no network.

../shared/eval/capable-model/replay.py serves the replies as an OpenAI-compatible server; a host
points both of production's model paths at it: the `openai` extractor (`LLM_BASE_URL`) and the
`workers-ai` extractor on production's model id, its binding answered by the host from the same
server in Workers AI's reply shape (`--text-upstream`, local/upstream_llm.mjs). The session sent
is one the replies were recorded for, read from the replies file. The tests assert behaviour
(the model's extractor processed the session, entities are stored, every refusal has a reason),
never what the model wrote. Without ../shared/eval/capable-model the module is skipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from bench.llm_meter import CAPABLE_DIR, Meter, start_replay

from entity_memory.settings import DEFAULT_AI_MODEL

from .hostproc import Host, host_for_tests

REPLIES = CAPABLE_DIR / "replies.jsonl"
pytestmark = pytest.mark.skipif(
    not REPLIES.exists(),
    reason=f"{REPLIES} is absent: the capable model's recorded replies live outside the repo",
)
#: The replay answers at once; the host's pipeline (grounding, resolution, embeddings) takes
#: the time on a busy machine.
REQUEST_TIMEOUT_S = 600


def _recorded_session() -> dict[str, Any]:
    with REPLIES.open() as lines:
        return json.loads(next(line for line in lines if line.strip()))


@pytest.fixture(scope="module")
def meter(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Meter]:
    """The replay, behind a meter that notes which model each call named."""
    with start_replay(tmp_path_factory.mktemp("replay")) as url, Meter(url).running() as m:
        yield m


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory, meter: Meter) -> Iterator[Host]:
    yield from host_for_tests(
        tmp_path_factory,
        "capable-replay-state",
        "--text-upstream",
        meter.url,
        "--var",
        f"LLM_BASE_URL={meter.url}",
        "--var",
        "LLM_MODEL=recorded",
        "--var",
        "LLM_ATTEMPTS=1",
    )


def _extract(
    host: Host, user: str, extractor: str, messages: list[dict[str, str]]
) -> dict[str, Any]:
    response = httpx.post(
        f"{host.base_url}/v1/users/{user}/sessions/s1/extract?wait=300",
        json={"messages": messages, "extractor": extractor},
        timeout=REQUEST_TIMEOUT_S,
    )
    assert response.status_code == 200, response.text
    return response.json()


def _assert_processed_by_the_model(
    host: Host, user: str, body: dict[str, Any], extractor: str
) -> None:
    assert (body["extractor"], body["processed"], body["degraded"]) == (extractor, True, False)
    assert body["counts"]["modelCalls"] >= 1
    assert body["usage"]["output_tokens"] > 0
    assert body["entities"], body
    for entity in body["entities"]:
        assert entity["provenance"][0]["extractor"] == extractor
    # Every candidate refused says why; grounding's refusals carry a machine-readable code.
    assert body["counts"]["rejected"] == len(body["rejected"])
    for rejection in body["rejected"]:
        assert rejection["reason"].strip()
        if rejection["reason"].startswith("ungrounded"):
            assert rejection["code"]
    stored = httpx.get(f"{host.base_url}/v1/users/{user}/entities", timeout=60).json()
    assert {e["id"] for e in stored["entities"]} >= {e["id"] for e in body["entities"]}


def test_the_openai_extractor_stores_what_the_recorded_model_answered(host: Host) -> None:
    session = _recorded_session()
    before = httpx.get(f"{host.base_url}/__kv-operations", timeout=30).json()
    body = _extract(host, "capable-openai", "openai", session["conversation"])
    _assert_processed_by_the_model(host, "capable-openai", body, "openai")
    # The job's KV calls, made in the user's writer outside the request, are counted by the host.
    after = httpx.get(f"{host.base_url}/__kv-operations", timeout=30).json()
    assert after["put"] > before["put"]


def test_production_s_workers_ai_path_runs_on_its_own_model_id(host: Host, meter: Meter) -> None:
    # The host keeps AI_MODEL at production's id and answers it from the upstream in the
    # chat-completion shape Workers AI gives for that model; production's parsing reads it.
    meter.take()
    session = _recorded_session()
    body = _extract(host, "capable-workers-ai", "workers-ai", session["conversation"])
    _assert_processed_by_the_model(host, "capable-workers-ai", body, "workers-ai")
    calls = meter.take()
    assert calls and {c.model for c in calls} == {DEFAULT_AI_MODEL}


@pytest.mark.parametrize("extractor", ["openai", "workers-ai"])
def test_a_conversation_the_model_cannot_answer_is_reported_not_invented(
    host: Host, extractor: str
) -> None:
    # An invented exchange with no recorded reply: the server answers 404, and the session is
    # reported degraded with the reason; nothing is stored in the model's name.
    messages = [
        {"role": "user", "content": "The kite shop's spring banner ads spend $12 a day."},
        {"role": "assistant", "content": "Noted, $12 a day on the spring banners."},
    ]
    user = f"capable-missing-{extractor}"
    body = _extract(host, user, extractor, messages)
    assert body["degraded"] is True and body["degradedReason"]
    assert not [e for e in body["entities"] if e["provenance"][0]["extractor"] == extractor]
