"""Shared pieces of the LLM protocol tests (test_llm_*.py): a conversation, known entities,
a well-formed reply, the replay server fixture and extractor builders. They test our clients,
not a model: the OpenAI-compatible extractor talks HTTP to a local replay server
(`llm_replay_server`), the Workers AI one gets a fake `ai_run`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

import httpx
import pytest

from entity_memory.extraction.base import KnownEntity, Message
from entity_memory.extraction.llm.ask import FREQUENCY_PENALTY, REPEAT_PENALTY
from entity_memory.extraction.llm.chat_models import REASONING_MAX_TOKENS, workers_ai_spec
from entity_memory.extraction.llm.openai_compat import OpenAICompatExtractor
from entity_memory.extraction.llm.prompt import system_prompt, user_payload
from entity_memory.extraction.llm.schema import entities_json_schema
from entity_memory.extraction.llm.workers_ai import DEFAULT_MODEL, WorkersAIExtractor
from entity_memory.settings import DEFAULT_LLM_MAX_TOKENS

from .llm_replay_server import ReplayServer

NOW = 1_780_000_000_000

CONVERSATION = [
    Message(role="user", content="Brand Search CPA is $48 this week, way over our $40 target."),
    Message(
        role="assistant",
        content="Alpha is on Manual CPC at $60/day. Switching it to target CPA at $45 should help.",
    ),
    Message(role="user", content="Do it. And keep updates to short bullet points please."),
]
KNOWN = [
    KnownEntity(type="campaign", id="campaign-alpha", name="Campaign Alpha", aliases=("Alpha",)),
    KnownEntity(type="metric", id="brand-search-cpa", name="Brand Search CPA"),
]

# Hand-written model replies, in the shape a good model gives for CONVERSATION.
CAMPAIGN = {
    "type": "campaign",
    "name": "Campaign Alpha",
    "content": "Alpha runs Manual CPC at $60/day; switching to target CPA at $45.",
    "importance": 0.8,
    "metadata": {"strategy": "target CPA $45", "budget": 60},
}
METRIC = {
    "type": "metric",
    "name": "Brand Search CPA",
    "content": "Brand Search CPA is $48 this week, over the $40 target.",
    "importance": 0.9,
    "metadata": {"kpi": "CPA", "value": 48, "unit": "USD", "campaign": "Brand Search"},
}
DECISION = {
    "type": "decision",
    "name": "Switch Alpha to target CPA",
    "content": "Agreed to switch Campaign Alpha from Manual CPC to target CPA at $45.",
    "importance": 0.95,
    "metadata": {
        "action": "switch bidding to target CPA $45",
        "rationale": "CPA over target",
        "affectedEntities": ["Campaign Alpha"],
        "reversible": True,
    },
}
PREFERENCE = {
    "type": "preference",
    "name": "Short bullet-point updates",
    "content": "The user wants updates as short bullet points.",
    "importance": 0.9,
    "metadata": {"category": "communication", "value": "short bullet points", "confidence": 0.95},
}
GOOD = {"entities": [CAMPAIGN, METRIC, DECISION, PREFERENCE]}
GOOD_TEXT = json.dumps(GOOD, indent=2)


def expected_messages(
    known: list[KnownEntity] = KNOWN,
    messages: list[Message] = CONVERSATION,
    previous: list[Message] | None = None,
) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": system_prompt()},
        {"role": "user", "content": user_payload(messages, NOW, known, previous or [])},
    ]


def schema_format() -> dict[str, Any]:
    return {
        "type": "json_schema",
        "json_schema": {"name": "entities", "schema": entities_json_schema(), "strict": False},
    }


async def httpx_post(
    url: str, headers: Mapping[str, str], body: bytes, timeout_s: float
) -> tuple[int, str, dict[str, str]]:
    """The CPython `HttpPost` for these tests (the Worker uses its `fetch`)."""
    async with httpx.AsyncClient(timeout=timeout_s) as client:
        response = await client.post(url, headers=dict(headers), content=body)
        return response.status_code, response.text, dict(response.headers)


class Sleeps:
    """An injected `sleep` that records the waits instead of waiting (tests stay fast)."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


# --- fixtures ----------------------------------------------------------------------------------


@pytest.fixture(scope="module", name="_server")
def replay_server_fixture():
    server = ReplayServer().start()
    yield server
    server.stop()


@pytest.fixture(name="server")
def server_fixture(_server: ReplayServer) -> ReplayServer:
    _server.reset()
    return _server


def openai(server: ReplayServer, **kwargs: Any) -> OpenAICompatExtractor:
    options: dict[str, Any] = {
        "api_key": "sk-test",
        "model": "qwen2.5-7b-instruct",
        "timeout_s": 5.0,
        "sleep": Sleeps(),
    }
    options.update(kwargs)
    options.setdefault("design", "single")
    return OpenAICompatExtractor(httpx_post, server.base_url, **options)


class FakeAi:
    """Records (model, inputs) and answers with the scripted results (or raises them)."""

    def __init__(self, *results: Any, delay_s: float = 0.0) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self._results = list(results)
        self._delay_s = delay_s

    async def __call__(self, model: str, inputs: dict[str, Any]) -> Any:
        self.calls.append((model, json.loads(json.dumps(inputs))))
        if self._delay_s:
            await asyncio.sleep(self._delay_s)
        result = self._results.pop(0)
        if isinstance(result, BaseException):
            raise result
        return result


LLAMA = "@cf/meta/llama-3.3-70b-instruct-fp8-fast"


def ai_inputs(
    messages: list[dict[str, str]] | None = None, model: str = DEFAULT_MODEL
) -> dict[str, Any]:
    spec = workers_ai_spec(model)
    schema = entities_json_schema()
    inputs: dict[str, Any] = {"messages": messages or expected_messages()}
    if spec.schema_style == "bare":
        inputs["response_format"] = {"type": "json_schema", "json_schema": schema}
    else:
        inputs["response_format"] = schema_format()
    inputs["max_tokens"] = REASONING_MAX_TOKENS if spec.reasoning else DEFAULT_LLM_MAX_TOKENS
    if not spec.reasoning:
        inputs["temperature"] = 0
        inputs["frequency_penalty"] = FREQUENCY_PENALTY
        inputs["repetition_penalty"] = REPEAT_PENALTY
    return inputs


AI_USAGE = {"prompt_tokens": 1500, "completion_tokens": 250, "total_tokens": 1750}


def workers(ai: FakeAi, **kwargs: Any) -> WorkersAIExtractor:
    return WorkersAIExtractor(ai, **{"sleep": Sleeps(), "design": "single", **kwargs})
