"""PROTOCOL tests for the two LLM extractors: they test our clients, not a model.

The OpenAI-compatible extractor talks HTTP to a local replay server (`llm_replay_server`) that
answers with hand-written replies in the shape real servers send; the Workers AI extractor gets
a fake `ai_run`. Each test asserts the exact request that left the client and what came back:
candidates, rejections with reasons, usage, retries and errors. Model quality is measured
elsewhere (the eval set), never here.
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import time
import types
from collections.abc import Mapping
from typing import Any

import httpx
import pytest

from entity_memory.domain.models import entity_input_adapter
from entity_memory.extraction.base import ExtractionError, KnownEntity, Message, Usage
from entity_memory.extraction.llm.chat import (
    DEFAULT_MAX_TOKENS,
    OutputError,
    entities_json_schema,
    parse_output,
    retry_messages,
    split_items,
)
from entity_memory.extraction.llm.openai_compat import OpenAICompatExtractor
from entity_memory.extraction.llm.prompt import (
    EXTRACTION_PROMPT,
    render_prompt,
    render_transcript,
    system_prompt,
)
from entity_memory.extraction.llm.workers_ai import DEFAULT_MODEL, WorkersAIExtractor

from .llm_replay_server import ReplayServer, Reply, completion, error

NOW = 1_780_000_000_000

CONVERSATION = [
    Message(role="user", content="Brand Search CPA is $48 this week, way over our $40 target."),
    Message(
        role="assistant",
        content="Alpha is on Manual CPC at $60/day. Switching it to target CPA at $45 should help.",
    ),
    Message(role="user", content="Do it. And keep updates to short bullet points please."),
]
TRANSCRIPT = (
    "user: Brand Search CPA is $48 this week, way over our $40 target.\n"
    "assistant: Alpha is on Manual CPC at $60/day. Switching it to target CPA at $45 should help.\n"
    "user: Do it. And keep updates to short bullet points please."
)
KNOWN = [
    KnownEntity(type="campaign", id="campaign-alpha", name="Campaign Alpha", aliases=("Alpha",)),
    KnownEntity(type="metric", id="brand-search-cpa", name="Brand Search CPA"),
]

SPEC_RULES = [
    "- Only extract entities with clear evidence in the conversation",
    "- Importance 0.9+: explicit decisions, critical metrics, stated preferences",
    "- Importance 0.5-0.8: mentioned campaigns, context metrics, implied preferences",
    "- Importance <0.5: background information, passing mentions",
    "- Merge with existing entities when updating rather than creating duplicates",
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


def expected_messages(known: list[KnownEntity] = KNOWN) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": system_prompt(known)},
        {"role": "user", "content": "Conversation:\n" + TRANSCRIPT},
    ]


def schema_format() -> dict[str, Any]:
    return {
        "type": "json_schema",
        "json_schema": {"name": "entities", "schema": entities_json_schema(), "strict": False},
    }


async def httpx_post(
    url: str, headers: Mapping[str, str], body: bytes, timeout_s: float
) -> tuple[int, str]:
    """The CPython `HttpPost` for these tests (the Worker uses its `fetch`)."""
    async with httpx.AsyncClient(timeout=timeout_s) as client:
        response = await client.post(url, headers=dict(headers), content=body)
        return response.status_code, response.text


# --- fixtures ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def _server():
    server = ReplayServer().start()
    yield server
    server.stop()


@pytest.fixture
def server(_server: ReplayServer) -> ReplayServer:
    _server.reset()
    return _server


def openai(server: ReplayServer, **kwargs: Any) -> OpenAICompatExtractor:
    options: dict[str, Any] = {
        "api_key": "sk-test",
        "model": "qwen2.5-7b-instruct",
        "timeout_s": 5.0,
    }
    options.update(kwargs)
    return OpenAICompatExtractor(httpx_post, server.base_url, **options)


# --- prompt ------------------------------------------------------------------------------------


def test_prompt_keeps_the_spec_text_and_lists_known_entities():
    prompt = system_prompt(KNOWN)
    # The SPEC's instructions and JSON shape, verbatim (braces as the model sees them).
    assert prompt.startswith("Analyze this conversation and extract structured entities.\n")
    for line in [
        "- CAMPAIGN: Campaign names, strategies, budgets, performance data, status changes",
        "- METRIC: Specific KPI values mentioned (CPA, ROAS, CTR, etc.) with context",
        "- DECISION: Choices made or agreed upon, with rationale and affected entities",
        "- PAIN_POINT: Frustrations, recurring issues, or problems the user expressed",
        "- PREFERENCE: Stated preferences for communication style, risk tolerance, analysis depth",
        '      "type": "campaign|metric|decision|pain_point|preference",',
        '      "importance": 0.0-1.0,',
        "Rules:",
        *SPEC_RULES,
    ]:
        assert line + "\n" in prompt
    assert "{{" not in prompt
    # The known entities, with aliases, and the instruction to reuse their names.
    assert '- campaign: "Campaign Alpha" (aliases: "Alpha")' in prompt
    assert '- metric: "Brand Search CPA"' in prompt
    assert "use exactly that type and name" in prompt
    # Per-type metadata keys in camelCase, as models.py names them.
    for key in ["campaignId", "lastPerformance", "affectedEntities", "relatedCampaigns", "kpi"]:
        assert key in prompt
    # No known entities: no section.
    assert "The user's existing entities" not in system_prompt([])


def test_spec_prompt_renders_with_the_transcript():
    assert render_transcript(CONVERSATION) == TRANSCRIPT
    rendered = render_prompt(CONVERSATION)
    assert "Conversation:\n" + TRANSCRIPT + "\n\nExtract entities as JSON:\n{\n" in rendered
    assert rendered.endswith(SPEC_RULES[-1])
    assert EXTRACTION_PROMPT.count("{conversation}") == 1


def test_known_entity_names_are_quoted_as_json():
    prompt = system_prompt([KnownEntity("preference", "p", 'Say "hi" first')])
    assert '- preference: "Say \\"hi\\" first"' in prompt


# --- schema ------------------------------------------------------------------------------------


def test_response_schema_is_self_contained_and_matches_the_models():
    schema = entities_json_schema()
    text = json.dumps(schema)
    for word in ["$ref", "$defs", "discriminator", '"const"', '"title"']:
        assert word not in text
    items = schema["properties"]["entities"]["items"]["anyOf"]
    assert [i["properties"]["type"]["enum"] for i in items] == [
        ["campaign"],
        ["metric"],
        ["decision"],
        ["pain_point"],
        ["preference"],
    ]
    for item in items:
        assert list(item["properties"])[:5] == ["type", "name", "content", "importance", "metadata"]
        assert item["required"] == ["type", "name", "content", "importance", "metadata"]
        assert "id" not in item["properties"]
        assert item["additionalProperties"] is False
    metric_meta = items[1]["properties"]["metadata"]
    assert metric_meta["required"] == ["kpi"] and "history" not in metric_meta["properties"]
    assert set(items[0]["properties"]["metadata"]["properties"]) == {
        "campaignId",
        "strategy",
        "budget",
        "status",
        "lastPerformance",
    }
    # What the schema describes, the models accept.
    for entity in GOOD["entities"]:
        entity_input_adapter.validate_python(entity)
    # Callers get a copy.
    schema["properties"].clear()
    assert entities_json_schema()["properties"]


# --- parsing -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        GOOD_TEXT,
        GOOD,
        f"```json\n{GOOD_TEXT}\n```",
        f"```\n{GOOD_TEXT}\n```\n",
        f"Here are the entities I found:\n\n{GOOD_TEXT}\n\nLet me know if you need more.",
        f"{GOOD_TEXT}\nNote: importance follows the rules {{0.9+ for decisions}}.",
        f"Sources [1], [2]:\n```json\n{GOOD_TEXT}\n```\nThe entities above {{ok}}",
        json.dumps(GOOD["entities"]),
        GOOD["entities"],
    ],
    ids=[
        "plain",
        "parsed-dict",
        "fence-json",
        "fence-bare",
        "prose-around",
        "trailing-braces",
        "brackets-before-fence",
        "bare-list-text",
        "bare-list",
    ],
)
def test_parse_output_finds_the_entities(raw):
    assert parse_output(raw) == GOOD["entities"]


def test_parse_output_accepts_a_single_entity_and_empty_results():
    assert parse_output(json.dumps(METRIC)) == [METRIC]
    assert parse_output('{"entities": []}') == []
    assert parse_output('{"entities": null}') == []


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("", "empty reply"),
        ("   ", "empty reply"),
        (GOOD_TEXT[: len(GOOD_TEXT) // 2], r"cut off \(truncated reply\)"),
        ("```json\n" + GOOD_TEXT[:200], r"cut off \(truncated reply\)"),
        ("{'entities': [{'type': 'campaign'}]}", "no JSON object"),
        ("I could not find any entities in this conversation.", "no JSON object"),
        ("Sure [see below", "no JSON object"),
        ('{"items": []}', 'no "entities" key'),
        ('{"entities": "none"}', '"entities" is not a list'),
        ("42", "not an object"),
    ],
)
def test_parse_output_rejects_unusable_replies(raw, reason):
    with pytest.raises(OutputError, match=reason):
        parse_output(raw)


def test_split_items_rejects_with_reasons_and_keeps_valid_siblings():
    items = [
        CAMPAIGN,
        {**METRIC, "type": "kpi_value"},
        {k: v for k, v in DECISION.items() if k != "name"},
        "Campaign Alpha",
        {**PREFERENCE, "name": "   "},
        {k: v for k, v in CAMPAIGN.items() if k != "type"},
        {**PREFERENCE, "type": "PREFERENCE"},
        {**METRIC, "type": "Pain Point", "name": "Slow reports"},
    ]
    candidates, rejected = split_items(items)
    assert candidates == [
        CAMPAIGN,
        PREFERENCE,
        {**METRIC, "type": "pain_point", "name": "Slow reports"},
    ]
    assert [r["reason"] for r in rejected] == [
        "unknown type 'kpi_value'",
        "missing name",
        "not an object",
        "invalid name '   '",
        "missing type",
    ]
    assert rejected[2]["item"] == "Campaign Alpha"


# --- OpenAI-compatible: the request --------------------------------------------------------------


async def test_openai_request_shape_and_well_formed_reply(server: ReplayServer):
    server.queue(completion(GOOD_TEXT, prompt_tokens=1234, completion_tokens=321))
    result = await openai(server).extract(CONVERSATION, KNOWN, NOW)

    assert len(server.requests) == 1
    request = server.requests[0]
    assert request.method == "POST"
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.headers["content-type"] == "application/json"
    body = request.json
    assert body == {
        "model": "qwen2.5-7b-instruct",
        "messages": expected_messages(),
        "temperature": 0,
        "response_format": schema_format(),
    }
    system = body["messages"][0]["content"]
    for rule in SPEC_RULES:
        assert rule in system
    assert "Campaign Alpha" in system and "Brand Search CPA" in system

    assert result.extractor == "openai"
    assert result.candidates == GOOD["entities"]
    assert result.rejected == []
    assert result.usage == Usage(input_tokens=1234, output_tokens=321)
    assert result.fallback_reason is None


async def test_openai_without_api_key_sends_no_authorization(server: ReplayServer):
    server.queue(completion('{"entities": []}', prompt_tokens=None))
    extractor = openai(server, api_key=None, model="llama3.1:8b", max_tokens=2048)
    result = await extractor.extract(CONVERSATION, [], NOW)
    request = server.requests[0]
    assert "authorization" not in request.headers
    assert request.json["model"] == "llama3.1:8b"
    assert request.json["max_tokens"] == 2048
    assert request.json["messages"] == expected_messages([])
    assert result.candidates == [] and result.usage is None


async def test_openai_base_url_with_trailing_slash(server: ReplayServer):
    server.queue(completion('{"entities": []}'))
    extractor = OpenAICompatExtractor(httpx_post, server.base_url + "/", "k", "m", 5.0)
    await extractor.extract(CONVERSATION, [], NOW)
    assert server.requests[0].path == "/v1/chat/completions"


# --- OpenAI-compatible: replies ------------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        f"```json\n{GOOD_TEXT}\n```",
        f"{GOOD_TEXT}\n\nI extracted four entities: a campaign, a metric, a decision and a "
        "preference.",
        f"Sure! Here is the JSON:\n{GOOD_TEXT}",
    ],
    ids=["fenced", "trailing-text", "leading-text"],
)
async def test_openai_lenient_replies_need_no_retry(server: ReplayServer, content: str):
    server.queue(completion(content))
    result = await openai(server).extract(CONVERSATION, KNOWN, NOW)
    assert len(server.requests) == 1
    assert result.candidates == GOOD["entities"]


async def test_openai_truncated_reply_is_retried_once_with_a_correction(server: ReplayServer):
    truncated = GOOD_TEXT[:700]
    server.queue(
        completion(truncated, prompt_tokens=1000, completion_tokens=4096, finish_reason="length"),
        completion(GOOD_TEXT, prompt_tokens=1300, completion_tokens=300),
    )
    result = await openai(server).extract(CONVERSATION, KNOWN, NOW)

    assert len(server.requests) == 2
    first, second = (r.json for r in server.requests)
    assert first["messages"] == expected_messages()
    assert second["messages"][:2] == expected_messages()
    assert second["messages"][2] == {"role": "assistant", "content": truncated}
    assert second["messages"][3]["role"] == "user"
    assert "the JSON is cut off (truncated reply)" in second["messages"][3]["content"]
    assert second["messages"] == retry_messages(
        expected_messages(), truncated, "the JSON is cut off (truncated reply)"
    )
    assert second["response_format"] == schema_format()
    assert result.candidates == GOOD["entities"]
    assert result.usage == Usage(input_tokens=2300, output_tokens=4396)


async def test_openai_invalid_json_then_good(server: ReplayServer):
    server.queue(
        completion("{'entities': [{'type': 'campaign', 'name': 'Campaign Alpha'}]}"),
        completion(GOOD_TEXT),
    )
    result = await openai(server).extract(CONVERSATION, KNOWN, NOW)
    assert len(server.requests) == 2
    assert result.candidates == GOOD["entities"]


async def test_openai_null_content_is_retried(server: ReplayServer):
    server.queue(completion(None), completion(GOOD_TEXT))
    result = await openai(server).extract(CONVERSATION, KNOWN, NOW)
    assert len(server.requests) == 2
    assert "empty reply" in server.requests[1].json["messages"][3]["content"]
    assert result.candidates == GOOD["entities"]


async def test_openai_two_bad_replies_raise(server: ReplayServer):
    server.queue(completion(GOOD_TEXT[:300]), completion("I'm sorry, I can't help with that."))
    with pytest.raises(ExtractionError, match="unusable model output after a retry"):
        await openai(server).extract(CONVERSATION, KNOWN, NOW)
    assert len(server.requests) == 2
    assert server.pending == 0


async def test_openai_schema_violating_items_are_rejected_and_siblings_kept(server: ReplayServer):
    bad_type = {**METRIC, "type": "kpi"}  # "kpi" is a known slip for metric: normalised
    wrong_type = {**DECISION, "type": "action_item"}
    nameless = {k: v for k, v in PREFERENCE.items() if k != "name"}
    content = json.dumps(
        {"entities": [CAMPAIGN, wrong_type, nameless, "Brand Search CPA", 7, bad_type, None]}
    )
    server.queue(completion(content))
    result = await openai(server).extract(CONVERSATION, KNOWN, NOW)
    assert len(server.requests) == 1  # parseable: no retry
    assert result.candidates == [CAMPAIGN, {**METRIC, "type": "metric"}]
    assert result.rejected == [
        {"item": wrong_type, "reason": "unknown type 'action_item'"},
        {"item": nameless, "reason": "missing name"},
        {"item": "Brand Search CPA", "reason": "not an object"},
        {"item": 7, "reason": "not an object"},
        {"item": None, "reason": "not an object"},
    ]


# --- OpenAI-compatible: HTTP errors, fallback, timeout -------------------------------------------


@pytest.mark.parametrize(
    ("reply", "match"),
    [
        (error(429, "Rate limit reached for requests", type_="requests"), "HTTP 429"),
        (error(500, "The server had an error", type_="server_error"), "HTTP 500"),
        (Reply(503, "upstream connect error"), "HTTP 503"),
        (error(401, "Incorrect API key provided"), "HTTP 401"),
        (error(400, "messages: too long", code="context_length_exceeded"), "HTTP 400"),
        (Reply(200, "<html>gateway</html>"), "not a chat completion"),
        (Reply(200, {"object": "list", "data": []}), "not a chat completion"),
    ],
    ids=["429", "500", "503-text", "401", "400-other", "200-html", "200-not-completion"],
)
async def test_openai_http_errors_raise_without_retry(server: ReplayServer, reply, match):
    server.queue(reply, completion(GOOD_TEXT))
    with pytest.raises(ExtractionError, match=match) as info:
        await openai(server).extract(CONVERSATION, KNOWN, NOW)
    assert len(server.requests) == 1
    assert "openai_compat" in str(info.value)


@pytest.mark.parametrize(
    "rejection",
    [
        error(400, "Invalid parameter: 'response_format' of type 'json_schema' is not supported"),
        Reply(
            422,
            {
                "detail": [
                    {
                        "type": "literal_error",
                        "loc": ["body", "response_format", "type"],
                        "msg": "Input should be 'text' or 'json_object'",
                    }
                ]
            },
        ),
    ],
    ids=["openai-400", "fastapi-422"],
)
async def test_openai_json_schema_rejected_falls_back_to_json_object(
    server: ReplayServer, rejection: Reply
):
    server.queue(
        rejection,
        completion(GOOD_TEXT),
        completion('{"entities": []}'),
    )
    extractor = openai(server)
    result = await extractor.extract(CONVERSATION, KNOWN, NOW)
    assert len(server.requests) == 2
    first, second = (r.json for r in server.requests)
    assert first["response_format"] == schema_format()
    assert second["response_format"] == {"type": "json_object"}
    assert second["messages"] == first["messages"] == expected_messages()
    assert result.candidates == GOOD["entities"]
    # Later calls go straight to json_object.
    await extractor.extract(CONVERSATION, KNOWN, NOW)
    assert len(server.requests) == 3
    assert server.requests[2].json["response_format"] == {"type": "json_object"}


async def test_openai_timeout_raises(server: ReplayServer):
    server.queue(Reply(200, completion(GOOD_TEXT).body, delay_s=1.5))
    extractor = openai(server, timeout_s=0.3)
    started = time.monotonic()
    with pytest.raises(ExtractionError, match=r"within 0\.3 s \(timeout\)"):
        await extractor.extract(CONVERSATION, KNOWN, NOW)
    assert time.monotonic() - started < 1.2
    assert len(server.requests) == 1


async def test_openai_timeout_of_the_http_post_itself():
    async def hangs(url, headers, body, timeout_s):
        await asyncio.sleep(10)

    extractor = OpenAICompatExtractor(hangs, "http://127.0.0.1:9/v1", None, "m", timeout_s=0.05)
    with pytest.raises(ExtractionError, match=r"no answer within 0\.05 s \(timeout\)"):
        await extractor.extract(CONVERSATION, [], NOW)


async def test_openai_connection_refused_raises():
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    extractor = OpenAICompatExtractor(httpx_post, f"http://127.0.0.1:{port}/v1", None, "m", 2.0)
    with pytest.raises(ExtractionError, match="ConnectError"):
        await extractor.extract(CONVERSATION, [], NOW)


def test_openai_needs_a_base_url():
    with pytest.raises(ValueError):
        OpenAICompatExtractor(httpx_post, "", None, "m")


# --- Workers AI through a fake ai_run ------------------------------------------------------------


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


def ai_inputs(messages: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {
        "messages": messages or expected_messages(),
        "response_format": {"type": "json_schema", "json_schema": entities_json_schema()},
        "max_tokens": DEFAULT_MAX_TOKENS,
        "temperature": 0,
    }


AI_USAGE = {"prompt_tokens": 1500, "completion_tokens": 250, "total_tokens": 1750}


@pytest.mark.parametrize(
    "result",
    [
        {"response": GOOD, "usage": AI_USAGE},
        {"response": GOOD_TEXT, "usage": AI_USAGE},
        {"response": f"```json\n{GOOD_TEXT}\n```", "usage": AI_USAGE},
        {"response": f"{GOOD_TEXT}\nThese are all the entities.", "usage": AI_USAGE},
        {
            "choices": [{"message": {"role": "assistant", "content": GOOD_TEXT}}],
            "usage": AI_USAGE,
        },
    ],
    ids=["object", "string", "fenced-string", "trailing-text", "openai-shape"],
)
async def test_workers_ai_reply_shapes(result):
    ai = FakeAi(result)
    extracted = await WorkersAIExtractor(ai).extract(CONVERSATION, KNOWN, NOW)
    assert ai.calls == [(DEFAULT_MODEL, ai_inputs())]
    assert DEFAULT_MODEL == "@cf/meta/llama-3.3-70b-instruct-fp8-fast"
    assert extracted.extractor == "workers-ai"
    assert extracted.candidates == GOOD["entities"]
    assert extracted.usage == Usage(input_tokens=1500, output_tokens=250)


async def test_workers_ai_plain_string_result_without_usage():
    ai = FakeAi(GOOD_TEXT)
    extractor = WorkersAIExtractor(ai, model="@cf/qwen/qwen3-30b-a3b-fp8", max_tokens=1024)
    extracted = await extractor.extract(CONVERSATION, KNOWN, NOW)
    model, inputs = ai.calls[0]
    assert model == "@cf/qwen/qwen3-30b-a3b-fp8"
    assert inputs["max_tokens"] == 1024
    assert extracted.candidates == GOOD["entities"] and extracted.usage is None


async def test_workers_ai_rejects_bad_items_and_keeps_the_rest():
    ai = FakeAi({"response": {"entities": [CAMPAIGN, {"type": "budget", "name": "x"}, [1]]}})
    extracted = await WorkersAIExtractor(ai).extract(CONVERSATION, KNOWN, NOW)
    assert extracted.candidates == [CAMPAIGN]
    assert [r["reason"] for r in extracted.rejected] == ["unknown type 'budget'", "not an object"]


async def test_workers_ai_unparseable_then_good():
    bad = {"response": GOOD_TEXT[:400], "usage": AI_USAGE}
    ai = FakeAi(bad, {"response": GOOD, "usage": AI_USAGE})
    extracted = await WorkersAIExtractor(ai).extract(CONVERSATION, KNOWN, NOW)
    assert len(ai.calls) == 2
    reason = "the JSON is cut off (truncated reply)"
    retry = retry_messages(expected_messages(), GOOD_TEXT[:400], reason)
    assert ai.calls[1] == (DEFAULT_MODEL, ai_inputs(retry))
    assert extracted.candidates == GOOD["entities"]
    assert extracted.usage == Usage(input_tokens=3000, output_tokens=500)


async def test_workers_ai_two_bad_replies_raise():
    ai = FakeAi({"response": ""}, {"response": None})
    with pytest.raises(ExtractionError, match="workers-ai: unusable model output"):
        await WorkersAIExtractor(ai).extract(CONVERSATION, KNOWN, NOW)
    assert len(ai.calls) == 2


async def test_workers_ai_offline_binding_raises_extraction_error():
    ai = FakeAi(RuntimeError("Error: Binding AI needs to be run remotely"))
    with pytest.raises(ExtractionError, match="needs to be run remotely"):
        await WorkersAIExtractor(ai).extract(CONVERSATION, KNOWN, NOW)
    assert len(ai.calls) == 1


async def test_workers_ai_timeout():
    ai = FakeAi({"response": GOOD}, delay_s=5)
    started = time.monotonic()
    with pytest.raises(ExtractionError, match=r"within 0\.05 s \(timeout\)"):
        await WorkersAIExtractor(ai, timeout_s=0.05).extract(CONVERSATION, KNOWN, NOW)
    assert time.monotonic() - started < 1


async def test_workers_ai_json_mode_not_met_asks_again_without_it():
    ai = FakeAi(
        RuntimeError("AiError: JSON Mode couldn't be met (5025)"),
        {"response": f"```json\n{GOOD_TEXT}\n```"},
        {"response": '{"entities": []}'},
    )
    extractor = WorkersAIExtractor(ai)
    extracted = await extractor.extract(CONVERSATION, KNOWN, NOW)
    assert [("response_format" in inputs) for _, inputs in ai.calls] == [True, False]
    assert ai.calls[1][1]["messages"] == expected_messages()
    assert extracted.candidates == GOOD["entities"]
    await extractor.extract(CONVERSATION, KNOWN, NOW)
    assert "response_format" not in ai.calls[2][1]


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

        async def text(self) -> str:
            return '{"error": "slow down"}'

    async def fetch(url: str, **options: Any) -> FakeResponse:
        seen.append((url, options))
        return FakeResponse()

    monkeypatch.setitem(sys.modules, "workers", types.SimpleNamespace(fetch=fetch))
    status, text = await worker_bindings.workers_http_post(
        "http://127.0.0.1:1/v1/chat/completions", {"Authorization": "Bearer k"}, b'{"a": 1}', 1.0
    )
    assert (status, text) == (429, '{"error": "slow down"}')
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
