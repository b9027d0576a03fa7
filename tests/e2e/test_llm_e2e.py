"""Extraction through the local model, end to end: the host's own llama-server behind its
Workers AI binding (local/llm.mjs), the Workers AI extractor as deployed, over HTTP.

What a real model writes varies with its build and the machine, so these tests assert
structure and grounding, never wording or counts of facts: a short conversation in gives typed
entities whose every stored excerpt is words of the conversation and whose every stored number
is in the conversation (a number that is not is dropped, and reported); a re-send asks the
model nothing; a reply cut off at its budget is counted, kept to its complete items, and not
asked again.
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from entity_memory.extraction.llm.chat_models import workers_ai_spec

from .hostproc import Host, host_for_tests

#: A local model call on 2 busy cores can take minutes; the host's own per-call timeout is 300 s.
REQUEST_TIMEOUT_S = 900
#: A ceiling for the host to report a state (a model restart loads 1.1 GB), not a measurement.
SETTLE_S = 300
TYPES = {"campaign", "metric", "decision", "pain_point", "preference"}
#: Metadata fields that hold a number the conversation must state.
NUMBER_FIELDS = ("budget", "value", "target")
#: The host's local model (local/llm.mjs) and the passes its design asks of a chunk.
LOCAL_MODEL = "local/qwen2.5-coder-1.5b-instruct"
PASSES_PER_CHUNK = len(workers_ai_spec(LOCAL_MODEL).passes or TYPES)

# An invented business (a tea shop), not one of the evaluation scenarios.
MESSAGES = [
    {
        "role": "user",
        "content": "Our Spring Matcha Launch campaign runs on Maximize Clicks with a daily "
        "budget of $45.",
    },
    {"role": "assistant", "content": "Noted. How is it doing?"},
    {
        "role": "user",
        "content": "Its CPC was $1.80 last week. Let's pause the Gift Boxes campaign until "
        "autumn. Please send me weekly summaries by email.",
    },
]
TEXT = " ".join(m["content"] for m in MESSAGES).lower()


def _host(tmp_path_factory: pytest.TempPathFactory, name: str, *args: str) -> Iterator[Host]:
    yield from host_for_tests(tmp_path_factory, name, *args, llm=True)


@pytest.fixture(scope="module")
def llm_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Host]:
    yield from _host(tmp_path_factory, "llm-state")


@pytest.fixture(scope="module")
def tiny_budget_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Host]:
    # Every reply is cut off after a few tokens: the model's budget is the var's.
    yield from _host(tmp_path_factory, "llm-cut-state", "--var", "AI_MAX_TOKENS=12")


def _extract(host: Host, user: str, session: str) -> dict[str, Any]:
    response = httpx.post(
        f"{host.base_url}/v1/users/{user}/sessions/{session}/extract?wait=300",
        json={"messages": MESSAGES, "extractor": "workers-ai"},
        timeout=REQUEST_TIMEOUT_S,
    )
    assert response.status_code == 200, response.text
    return response.json()


def _numbers(text: str) -> set[float]:
    return {float(n.replace(",", "")) for n in re.findall(r"\d[\d,]*(?:\.\d+)?", text)}


def _assert_grounded(entity: dict[str, Any]) -> None:
    assert entity["type"] in TYPES
    assert entity["name"].strip()
    excerpts = [p["excerpt"] for p in entity["provenance"] if p.get("excerpt")]
    assert excerpts, entity
    for excerpt in excerpts:
        assert excerpt.lower() in TEXT, excerpt
    stated = _numbers(TEXT)
    for key in NUMBER_FIELDS:
        value = entity["metadata"].get(key)
        if isinstance(value, int | float):
            assert float(value) in stated, (key, value, excerpts)


def test_the_local_model_stores_grounded_typed_entities(llm_host: Host) -> None:
    body = _extract(llm_host, "tea", "s1")
    assert (body["extractor"], body["processed"], body["degraded"]) == ("workers-ai", True, False)
    assert body["counts"]["modelCalls"] >= PASSES_PER_CHUNK
    assert body["usage"]["input_tokens"] > 0 and body["usage"]["output_tokens"] > 0
    assert body["entities"], body
    for entity in body["entities"]:
        _assert_grounded(entity)
        assert entity["provenance"][0]["extractor"] == "workers-ai"
    # What was refused says why, with a machine-readable reason.
    for rejection in body["rejected"]:
        assert rejection["reason"]
    for dropped in body["dropped"]:
        assert dropped["code"] and dropped["reason"] and dropped["field"]
    stored = httpx.get(f"{llm_host.base_url}/v1/users/tea/entities", timeout=30).json()
    assert {e["id"] for e in stored["entities"]} >= {e["id"] for e in body["entities"]}


def _versions(host: Host, user: str) -> dict[str, int]:
    listed = httpx.get(f"{host.base_url}/v1/users/{user}/entities", timeout=30).json()
    return {e["id"]: e["version"] for e in listed["entities"]}


def test_a_resent_session_asks_the_model_nothing(llm_host: Host) -> None:
    first = _extract(llm_host, "tea-resend", "s1")
    assert first["counts"]["newMessages"] == len(MESSAGES)
    before = _versions(llm_host, "tea-resend")
    again = _extract(llm_host, "tea-resend", "s1")
    # The exact session was processed: no model call, nothing written again.
    assert again["processed"] is False
    assert not again.get("usage") or again["usage"]["input_tokens"] == 0
    assert not [r for r in again["results"] if r["status"] == "created"]
    assert _versions(llm_host, "tea-resend") == before


def _text_model(host: Host) -> dict[str, Any]:
    health = httpx.get(f"{host.base_url}/healthz", timeout=30).json()
    model: dict[str, Any] = health["host"]["textModel"]
    return model


def _until(host: Host, what: str, test: Any) -> dict[str, Any]:
    deadline = time.monotonic() + SETTLE_S
    while not test(model := _text_model(host)):
        assert time.monotonic() < deadline, f"/healthz never said {what}: {model}"
        time.sleep(0.2)
    return model


def test_a_killed_model_server_is_reported_and_restarted(llm_host: Host) -> None:
    """SIGKILL the host's llama-server: /healthz says how it died and that it restarts, then
    that a new one answers; an extraction afterwards runs on the new server."""
    ready = _until(llm_host, "ready", lambda m: m["state"] == "ready")
    pid = ready["pid"]
    assert Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].endswith(b"llama-server")
    os.kill(pid, signal.SIGKILL)
    crashed = _until(llm_host, "the crash", lambda m: m.get("lastExit") is not None)
    assert crashed["lastExit"]["how"] == "killed by SIGKILL"
    assert crashed["state"] in ("restarting", "starting", "ready")
    stderr = (llm_host.persist_dir.parent / "host.stderr").read_text()
    assert f"llama-server (pid {pid}) killed by SIGKILL" in stderr
    back = _until(llm_host, "a new server", lambda m: m["state"] == "ready" and m["pid"] != pid)
    assert back["restarts"] == 1
    body = _extract(llm_host, "tea-after-crash", "s1")
    assert (body["processed"], body["degraded"]) == (True, False)


def test_replies_cut_off_are_counted_and_not_asked_again(tiny_budget_host: Host) -> None:
    body = _extract(tiny_budget_host, "tea-cut", "s1")
    assert body["processed"] is True
    assert body["counts"]["truncatedReplies"] >= 1
    # One call per pass: a cut-off reply is not retried (it would be cut off again).
    assert body["counts"]["modelCalls"] == PASSES_PER_CHUNK
    for entity in body["entities"]:
        _assert_grounded(entity)
