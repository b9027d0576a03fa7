"""PROTOCOL tests of the OpenAI-compatible client against a replay server: the request, replies,
HTTP errors, backoff, timeouts and splitting. They test our client, not a model."""

from __future__ import annotations

import asyncio
import json
import socket

import pytest

from entity_memory.extraction.base import KnownEntity, Message, Usage
from entity_memory.extraction.llm.ask import FREQUENCY_PENALTY, REPEAT_PENALTY
from entity_memory.extraction.llm.chunking import plan_chunks
from entity_memory.extraction.llm.openai_compat import OpenAICompatExtractor
from entity_memory.extraction.llm.workers_ai import WorkersAIExtractor
from entity_memory.settings import DEFAULT_LLM_MAX_TOKENS

from .llm_fixtures import (  # noqa: F401  (fixtures)
    CAMPAIGN,
    CONVERSATION,
    DECISION,
    GOOD,
    GOOD_TEXT,
    KNOWN,
    METRIC,
    NOW,
    PREFERENCE,
    FakeAi,
    Sleeps,
    expected_messages,
    httpx_post,
    openai,
    replay_server_fixture,
    schema_format,
    server_fixture,
)
from .llm_replay_server import ReplayServer, Reply, completion, error


async def test_openai_request_shape_and_well_formed_reply(server: ReplayServer):
    server.queue(completion(GOOD_TEXT, prompt_tokens=1234, completion_tokens=321))
    result = await openai(server).extract(CONVERSATION, KNOWN, NOW)

    assert len(server.requests) == 1
    request = server.requests[0]
    assert request.method == "POST"
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.headers["content-type"] == "application/json"
    # No temperature unless configured; max_tokens and repetition controls always set.
    assert request.json == {
        "model": "qwen2.5-7b-instruct",
        "messages": expected_messages(),
        "max_tokens": DEFAULT_LLM_MAX_TOKENS,
        "frequency_penalty": FREQUENCY_PENALTY,
        "repeat_penalty": REPEAT_PENALTY,
        "response_format": schema_format(),
    }
    assert result.extractor == "openai"
    assert result.candidates == GOOD["entities"]
    assert result.rejected == [] and result.failures == []
    assert result.usage == Usage(input_tokens=1234, output_tokens=321)


async def test_openai_temperature_is_sent_when_set_but_never_to_reasoning_models(
    server: ReplayServer,
):
    server.queue(completion('{"entities": []}'), completion('{"entities": []}'))
    await openai(server, temperature=0.2, max_tokens=2048).extract(CONVERSATION, [], NOW)
    await openai(server, model="o3-mini", temperature=0.2).extract(CONVERSATION, [], NOW)
    first, second = (r.json for r in server.requests)
    assert (first["temperature"], first["max_tokens"]) == (0.2, 2048)
    assert "temperature" not in second


async def test_openai_without_api_key_sends_no_authorization(server: ReplayServer):
    server.queue(completion('{"entities": []}', prompt_tokens=None))
    extractor = openai(server, api_key=None, model="llama3.1:8b")
    result = await extractor.extract(CONVERSATION, [], NOW)
    request = server.requests[0]
    assert "authorization" not in request.headers
    assert request.json["model"] == "llama3.1:8b"
    assert request.json["messages"] == expected_messages([])
    assert result.candidates == [] and result.usage == Usage()


async def test_openai_base_url_with_trailing_slash(server: ReplayServer):
    server.queue(completion('{"entities": []}'))
    extractor = OpenAICompatExtractor(httpx_post, server.base_url + "/", "k", "m", 5.0)
    await extractor.extract(CONVERSATION, [], NOW)
    assert server.requests[0].path == "/v1/chat/completions"


async def test_known_entities_are_ranked_against_the_chunk():
    from entity_memory.domain.models import IndexEntry

    def known(name: str, importance: float) -> KnownEntity:
        entry = IndexEntry(
            id=name.lower().replace(" ", "-"),
            type="campaign",
            name=name,
            importance=importance,
            updated_at=NOW,
            keywords=name.lower().split(),
            name_terms=len(name.split()),
        )
        return KnownEntity("campaign", entry.id, name, entry=entry)

    many = [known(f"Filler {i} Display", 0.9) for i in range(60)] + [known("Kiln Classes", 0.2)]
    ai = FakeAi({"response": {"entities": []}})
    talk = [Message(role="user", content="Pause Kiln Classes for the holidays.")]
    await WorkersAIExtractor(ai, sleep=Sleeps()).extract(talk, many, NOW)
    doc = json.loads(ai.calls[0][1]["messages"][1]["content"])
    names = [k["name"] for k in doc["knownEntities"]]
    assert names[0] == "Kiln Classes"
    assert len(names) <= 40


async def test_open_pain_points_and_preferences_are_always_shown_and_reported():
    from entity_memory.domain.models import IndexEntry

    def known(kind: str, name: str, importance: float, **facts: object) -> KnownEntity:
        entry = IndexEntry(
            id=name.lower().replace(" ", "-"),
            type=kind,  # type: ignore[arg-type]
            name=name,
            importance=importance,
            updated_at=NOW,
            keywords=name.lower().split(),
            name_terms=len(name.split()),
        )
        return KnownEntity(kind, entry.id, name, facts=facts, entry=entry)

    many = [known("campaign", f"Kiln Classes {i}", 0.9) for i in range(60)]
    standing = [
        known("pain_point", "Glaze supplier delays", 0.1, resolved=False),
        known("preference", "Weekly email only", 0.1, category="communication"),
    ]
    fixed = known("pain_point", "Broken booking form", 0.1, resolved=True)
    ai = FakeAi({"response": {"entities": []}})
    talk = [Message(role="user", content="Kiln Classes are selling out.")]
    result = await WorkersAIExtractor(ai, sleep=Sleeps()).extract(
        talk, [*many, *standing, fixed], NOW
    )
    doc = json.loads(ai.calls[0][1]["messages"][1]["content"])
    names = [k["name"] for k in doc["knownEntities"]]
    assert {"Glaze supplier delays", "Weekly email only"} <= set(names)
    assert "Broken booking form" not in names
    assert result.shown == {
        (k["type"], k["name"].lower().replace(" ", "-")) for k in doc["knownEntities"]
    }


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


async def test_openai_truncated_reply_is_split_not_repeated(server: ReplayServer):
    """finish_reason "length": the same request would be cut again, so the chunk is halved."""
    part_one = {"entities": [METRIC]}
    part_two = {"entities": [DECISION, PREFERENCE]}
    server.queue(
        completion(GOOD_TEXT[:700], completion_tokens=4096, finish_reason="length"),
        completion(json.dumps(part_one), prompt_tokens=900, completion_tokens=100),
        completion(json.dumps(part_two), prompt_tokens=950, completion_tokens=150),
    )
    result = await openai(server).extract(CONVERSATION, KNOWN, NOW)
    assert len(server.requests) == 3
    first, second, third = (json.loads(r.json["messages"][1]["content"]) for r in server.requests)
    assert len(first["conversation"]) == 3
    assert second["conversation"] == [CONVERSATION[0].model_dump()]
    # The second half sees the first half as earlier (read-only) context.
    assert third["conversation"] == [m.model_dump() for m in CONVERSATION[1:]]
    assert third["earlierMessages"] == [CONVERSATION[0].model_dump()]
    assert result.candidates == [METRIC, DECISION, PREFERENCE]
    assert result.failures == []
    assert result.calls == 3


async def test_openai_invalid_json_then_good(server: ReplayServer):
    server.queue(
        completion("{'entities': [{'type': 'campaign', 'name': 'Campaign Alpha'}]}"),
        completion(GOOD_TEXT),
    )
    result = await openai(server).extract(CONVERSATION, KNOWN, NOW)
    assert len(server.requests) == 2
    second = server.requests[1].json["messages"]
    assert second[:2] == expected_messages()
    assert second[2]["role"] == "assistant" and "no JSON object" in second[3]["content"]
    assert result.candidates == GOOD["entities"]


async def test_openai_null_content_is_retried(server: ReplayServer):
    server.queue(completion(None), completion(GOOD_TEXT))
    result = await openai(server).extract(CONVERSATION, KNOWN, NOW)
    assert len(server.requests) == 2
    assert "empty reply" in server.requests[1].json["messages"][3]["content"]
    assert result.candidates == GOOD["entities"]


async def test_openai_two_bad_replies_fail_the_chunk(server: ReplayServer):
    server.queue(completion("Not JSON at all."), completion("I'm sorry, I can't help with that."))
    result = await openai(server).extract(CONVERSATION, KNOWN, NOW)
    assert len(server.requests) == 2
    assert result.candidates == []
    [failure] = result.failures
    assert (failure.start, failure.end) == (0, 3)
    assert "unusable model output after a retry" in failure.reason


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


# --- OpenAI-compatible: HTTP errors, backoff, timeout --------------------------------------------


async def test_openai_429_then_success_honours_retry_after(server: ReplayServer):
    limited = error(429, "Rate limit reached for requests", type_="requests")
    limited.headers["Retry-After"] = "7"
    server.queue(limited, completion(GOOD_TEXT))
    sleeps = Sleeps()
    result = await openai(server, sleep=sleeps).extract(CONVERSATION, KNOWN, NOW)
    assert len(server.requests) == 2
    assert server.requests[0].json == server.requests[1].json
    assert sleeps.waits == [7.0]
    assert result.candidates == GOOD["entities"] and result.failures == []


@pytest.mark.parametrize(
    "reply",
    [
        error(500, "The server had an error", type_="server_error"),
        Reply(503, "upstream connect error"),
        error(429, "Too many requests"),
    ],
    ids=["500", "503-text", "429-no-retry-after"],
)
async def test_openai_transient_errors_back_off_exponentially(server: ReplayServer, reply: Reply):
    server.queue(reply, reply, reply, completion(GOOD_TEXT))
    sleeps = Sleeps()
    result = await openai(server, sleep=sleeps).extract(CONVERSATION, KNOWN, NOW)
    assert len(server.requests) == 4
    assert sleeps.waits == [1.0, 2.0, 4.0]
    assert result.candidates == GOOD["entities"]


async def test_openai_persistent_5xx_fails_the_chunk_after_the_attempts(server: ReplayServer):
    server.queue(*[error(502, "bad gateway", type_="server_error")] * 3)
    result = await openai(server, attempts=3).extract(CONVERSATION, KNOWN, NOW)
    assert len(server.requests) == 3
    [failure] = result.failures
    assert "HTTP 502" in failure.reason and "gave up after 3 attempts" in failure.reason


@pytest.mark.parametrize(
    ("reply", "match"),
    [
        (error(401, "Incorrect API key provided"), "HTTP 401"),
        (Reply(200, "<html>gateway</html>"), "not a chat completion"),
        (Reply(200, {"object": "list", "data": []}), "not a chat completion"),
    ],
    ids=["401", "200-html", "200-not-completion"],
)
async def test_openai_permanent_errors_fail_without_retry(server: ReplayServer, reply, match):
    server.queue(reply, completion(GOOD_TEXT))
    result = await openai(server).extract(CONVERSATION, KNOWN, NOW)
    assert len(server.requests) == 1
    [failure] = result.failures
    assert match in failure.reason and "openai_compat" in failure.reason


async def test_openai_context_length_error_splits_the_chunk(server: ReplayServer):
    server.queue(
        error(400, "This model's maximum context length is 8192 tokens", code="context_length"),
        completion(json.dumps({"entities": [METRIC]})),
        completion(json.dumps({"entities": [DECISION]})),
    )
    result = await openai(server).extract(CONVERSATION, KNOWN, NOW)
    assert len(server.requests) == 3
    assert result.candidates == [METRIC, DECISION] and result.failures == []


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
    server.queue(rejection, completion(GOOD_TEXT), completion('{"entities": []}'))
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


def _post_hanging_first(*replies: str, hangs: int = 1):
    """An `http_post` whose first `hangs` calls never answer and the rest answer `replies`:
    a timeout that fires whatever the machine's load (no race between a delay and a bound)."""
    calls: list[bytes] = []
    queue = list(replies)

    async def post(url, headers, body, timeout_s):
        calls.append(body)
        if len(calls) <= hangs:
            await asyncio.Event().wait()
        return 200, queue.pop(0), {}

    return post, calls


async def test_openai_timeout_is_retried_then_fails_the_chunk():
    post, calls = _post_hanging_first(hangs=2)
    sleeps = Sleeps()
    extractor = OpenAICompatExtractor(
        post, "http://llm.test/v1", None, "m", 0.05, attempts=2, sleep=sleeps, design="single"
    )
    result = await extractor.extract(CONVERSATION, KNOWN, NOW)
    assert len(calls) == 2 and sleeps.waits == [1.0]
    [failure] = result.failures
    assert "within 0.05 s (timeout)" in failure.reason


async def test_openai_timeout_then_success():
    post, calls = _post_hanging_first(json.dumps(completion(GOOD_TEXT).body))
    extractor = OpenAICompatExtractor(
        post, "http://llm.test/v1", None, "m", 0.05, sleep=Sleeps(), design="single"
    )
    result = await extractor.extract(CONVERSATION, KNOWN, NOW)
    assert len(calls) == 2
    assert result.candidates == GOOD["entities"] and result.failures == []


async def test_openai_timeout_of_the_http_post_itself():
    async def hangs(url, headers, body, timeout_s):
        await asyncio.sleep(10)

    extractor = OpenAICompatExtractor(
        hangs, "http://127.0.0.1:9/v1", None, "m", timeout_s=0.05, attempts=1
    )
    result = await extractor.extract(CONVERSATION, [], NOW)
    assert "no answer within 0.05 s (timeout)" in result.failures[0].reason


async def test_openai_connection_refused_fails_the_chunk():
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    extractor = OpenAICompatExtractor(
        httpx_post, f"http://127.0.0.1:{port}/v1", None, "m", 2.0, sleep=Sleeps()
    )
    result = await extractor.extract(CONVERSATION, [], NOW)
    assert "ConnectError" in result.failures[0].reason


def test_openai_needs_a_base_url():
    with pytest.raises(ValueError):
        OpenAICompatExtractor(httpx_post, "", None, "m")


async def test_one_failing_chunk_among_several_keeps_the_others(server: ReplayServer):
    """Three chunks; the middle one fails for good: the others' entities are kept and the
    failure names the middle messages."""
    talk = [Message(role="user", content=f"Note {i}: " + "budget talk " * 300) for i in range(6)]
    extractor = openai(server, context_tokens=8192, attempts=2)
    chunks = plan_chunks(talk, extractor.budgets()[0])
    assert len(chunks) >= 3
    replies = [completion(json.dumps({"entities": [METRIC]}))]
    replies += [error(503, "overloaded", type_="server_error")] * 2
    replies += [completion(json.dumps({"entities": [PREFERENCE]}))] * (len(chunks) - 2)
    server.queue(*replies)
    result = await extractor.extract(talk, [], NOW)
    assert result.candidates[0] == METRIC and PREFERENCE in result.candidates
    [failure] = result.failures
    assert (failure.start, failure.end) == (chunks[1].start, chunks[1].end)
