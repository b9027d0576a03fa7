"""The Worker-side adapters (worker_bindings), with fakes for the runtime."""

from __future__ import annotations

import asyncio
import sys
import types
from typing import Any, ClassVar

import pytest

from .llm_fixtures import (
    AI_USAGE,
    CAMPAIGN,
)

# --- the Worker-side adapters (worker_bindings), with fakes for the runtime ----------------------


class JsDictLike(dict):
    """What the SDK hands back for a JS object: a dict subclass."""


class FakeAiBinding:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def run(self, model: str, inputs: dict[str, Any]) -> Any:
        self.calls.append((model, inputs))
        return JsDictLike(response=JsDictLike(entities=[JsDictLike(CAMPAIGN)]), usage=AI_USAGE)


class FakeEnv:
    def __init__(self, **attrs: Any) -> None:
        self.__dict__.update(attrs)


async def test_worker_ai_run_returns_plain_python():
    from adapters.workers import workers_ai_run

    binding = FakeAiBinding()
    result = await workers_ai_run(binding)("@cf/m", {"messages": []})
    assert binding.calls == [("@cf/m", {"messages": []})]
    assert type(result) is dict and type(result["response"]) is dict
    assert result["response"]["entities"] == [CAMPAIGN]


async def test_worker_http_post_uses_workers_fetch(monkeypatch):
    from adapters import workers as worker_bindings

    seen: list[tuple[str, dict[str, Any]]] = []

    class FakeResponse:
        status = 429
        headers: ClassVar[dict[str, str]] = {"retry-after": "3"}

        async def text(self) -> str:
            return '{"error": "slow down"}'

    async def fetch(url: str, **options: Any) -> FakeResponse:
        seen.append((url, options))
        return FakeResponse()

    monkeypatch.setitem(sys.modules, "workers", types.SimpleNamespace(fetch=fetch))
    status, text, headers = await worker_bindings.workers_http_post(
        "http://127.0.0.1:1/v1/chat/completions", {"Authorization": "Bearer k"}, b'{"a": 1}', 1.0
    )
    assert (status, text, headers) == (429, '{"error": "slow down"}', {"retry-after": "3"})
    assert seen == [
        (
            "http://127.0.0.1:1/v1/chat/completions",
            {"method": "POST", "headers": {"Authorization": "Bearer k"}, "body": '{"a": 1}'},
        )
    ]

    async def slow_fetch(url: str, **options: Any) -> FakeResponse:
        await asyncio.sleep(5)
        return FakeResponse()

    monkeypatch.setitem(sys.modules, "workers", types.SimpleNamespace(fetch=slow_fetch))
    with pytest.raises(TimeoutError):
        await worker_bindings.workers_http_post("http://x/v1", {}, b"{}", 0.05)


def test_bind_wires_ai_http_and_vars():
    from adapters.workers import bind, workers_http_post

    env = FakeEnv(
        ENTITIES=object(),
        AI=FakeAiBinding(),
        EXTRACTOR="openai_compat",
        LLM_BASE_URL="http://127.0.0.1:9999/v1",
        LLM_API_KEY="sk-local",
        TTL_DAYS_METRIC="30",
        OTHER_NUMBER=3,
    )
    bindings = bind(env)
    assert bindings.ai_run is not None
    assert bindings.http_post is workers_http_post
    assert bindings.vars.get("EXTRACTOR") == "openai_compat"
    assert bindings.vars["LLM_API_KEY"] == "sk-local"
    assert bindings.vars.get("LLM_MODEL") is None and "LLM_MODEL" not in bindings.vars
    assert bindings.vars.get("AI") is None  # a binding is not a var
    assert bindings.vars.get("OTHER_NUMBER") == 3  # any name can be read
    assert dict(bindings.vars) == {
        "EXTRACTOR": "openai_compat",
        "LLM_BASE_URL": "http://127.0.0.1:9999/v1",
        "LLM_API_KEY": "sk-local",
        "TTL_DAYS_METRIC": "30",
    }
    assert bind(FakeEnv(ENTITIES=object())).ai_run is None
