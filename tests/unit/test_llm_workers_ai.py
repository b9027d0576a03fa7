"""PROTOCOL tests of the Workers AI client through a fake `ai_run`: reply shapes, schema forms,
retries, JSON-mode refusal and splitting."""

from __future__ import annotations

import json

import pytest

from entity_memory.extraction.base import ExtractionResult, Usage
from entity_memory.extraction.llm.chat import retry_messages
from entity_memory.extraction.llm.chat_models import REASONING_MAX_TOKENS, workers_ai_spec
from entity_memory.extraction.llm.schema import entities_json_schema
from entity_memory.extraction.llm.workers_ai import DEFAULT_MODEL
from entity_memory.settings import DEFAULT_LLM_MAX_TOKENS

from .llm_fixtures import (
    AI_USAGE,
    CAMPAIGN,
    CONVERSATION,
    DECISION,
    GOOD,
    GOOD_TEXT,
    KNOWN,
    LLAMA,
    METRIC,
    NOW,
    FakeAi,
    Sleeps,
    ai_inputs,
    expected_messages,
    schema_format,
    workers,
)


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
    extracted = await workers(ai).extract(CONVERSATION, KNOWN, NOW)
    assert ai.calls == [(DEFAULT_MODEL, ai_inputs())]
    assert extracted.extractor == "workers-ai"
    assert extracted.candidates == GOOD["entities"]
    assert extracted.usage == Usage(input_tokens=1500, output_tokens=250)


def test_workers_ai_schema_form_per_model():
    """Newer models take {name, schema, strict}; the older Llama ones the bare schema."""
    glm_extractor = workers(FakeAi())
    glm = glm_extractor._inputs(glm_extractor.full_ask([]))
    assert glm["response_format"] == schema_format()
    assert "temperature" not in glm  # a reasoning model
    assert glm["max_tokens"] == REASONING_MAX_TOKENS
    llama_extractor = workers(FakeAi(), model=LLAMA)
    llama = llama_extractor._inputs(llama_extractor.full_ask([]))
    assert llama["response_format"] == {
        "type": "json_schema",
        "json_schema": entities_json_schema(),
    }
    assert (llama["temperature"], llama["max_tokens"]) == (0, DEFAULT_LLM_MAX_TOKENS)
    assert workers_ai_spec(LLAMA).context_tokens == 24_000


async def test_workers_ai_plain_string_result_without_usage():
    ai = FakeAi(GOOD_TEXT)
    extractor = workers(ai, model="@cf/qwen/qwen3-30b-a3b-fp8", max_tokens=1024)
    extracted = await extractor.extract(CONVERSATION, KNOWN, NOW)
    model, inputs = ai.calls[0]
    assert model == "@cf/qwen/qwen3-30b-a3b-fp8"
    assert inputs["max_tokens"] == 1024
    assert extracted.candidates == GOOD["entities"] and extracted.usage == Usage()


async def test_workers_ai_rejects_bad_items_and_keeps_the_rest():
    ai = FakeAi({"response": {"entities": [CAMPAIGN, {"type": "budget", "name": "x"}, [1]]}})
    extracted = await workers(ai).extract(CONVERSATION, KNOWN, NOW)
    assert extracted.candidates == [CAMPAIGN]
    assert [r["reason"] for r in extracted.rejected] == ["unknown type 'budget'", "not an object"]


async def test_workers_ai_unparseable_then_good():
    bad = {"response": "I found a campaign and a metric.", "usage": AI_USAGE}
    ai = FakeAi(bad, {"response": GOOD, "usage": AI_USAGE})
    extracted = await workers(ai).extract(CONVERSATION, KNOWN, NOW)
    assert len(ai.calls) == 2
    retry = retry_messages(expected_messages(), bad["response"], "no JSON object in the reply")
    assert ai.calls[1] == (DEFAULT_MODEL, ai_inputs(retry))
    assert extracted.candidates == GOOD["entities"]
    assert extracted.usage == Usage(input_tokens=3000, output_tokens=500)


async def test_workers_ai_truncated_reply_is_split():
    ai = FakeAi(
        {"response": GOOD_TEXT[:400], "usage": AI_USAGE},  # JSON stops mid-way
        {"response": {"entities": [METRIC]}},
        {"response": {"entities": [DECISION]}},
    )
    extracted = await workers(ai).extract(CONVERSATION, KNOWN, NOW)
    assert len(ai.calls) == 3
    halves = [json.loads(c[1]["messages"][1]["content"])["conversation"] for c in ai.calls[1:]]
    assert [len(h) for h in halves] == [1, 2]
    assert extracted.candidates == [METRIC, DECISION] and extracted.failures == []


async def test_workers_ai_two_bad_replies_fail_the_chunk():
    ai = FakeAi({"response": ""}, {"response": None})
    extracted = await workers(ai).extract(CONVERSATION, KNOWN, NOW)
    assert len(ai.calls) == 2
    assert "workers-ai: unusable model output" in extracted.failures[0].reason


async def test_workers_ai_offline_binding_fails_without_retry():
    ai = FakeAi(RuntimeError("Error: Binding AI needs to be run remotely"))
    extracted = await workers(ai).extract(CONVERSATION, KNOWN, NOW)
    assert len(ai.calls) == 1
    assert "needs to be run remotely" in extracted.failures[0].reason


async def test_workers_ai_out_of_capacity_3040_is_retried_with_backoff():
    sleeps = Sleeps()
    ai = FakeAi(
        RuntimeError("AiError: 3040: No more data centers to forward the request to"),
        RuntimeError("InferenceUpstreamError: 3040 Capacity temporarily exceeded"),
        {"response": GOOD},
    )
    extracted = await workers(ai, sleep=sleeps).extract(CONVERSATION, KNOWN, NOW)
    assert len(ai.calls) == 3 and sleeps.waits == [1.0, 2.0]
    assert extracted.candidates == GOOD["entities"]


async def test_workers_ai_5xx_and_429_are_retried():
    ai = FakeAi(
        RuntimeError("AiError: 500 Internal Server Error"),
        RuntimeError("AiError: 429 Too Many Requests"),
        {"response": GOOD},
    )
    extracted = await workers(ai).extract(CONVERSATION, KNOWN, NOW)
    assert len(ai.calls) == 3 and extracted.failures == []


async def test_workers_ai_timeout_is_retried():
    ai = FakeAi({"response": GOOD}, delay_s=3600)  # never answers within the bound
    extracted = await workers(ai, timeout_s=0.05, attempts=2).extract(CONVERSATION, KNOWN, NOW)
    assert len(ai.calls) == 2
    assert "within 0.05 s (timeout)" in extracted.failures[0].reason


@pytest.mark.parametrize(
    "refusal",
    [
        "AiError: 5025: This model doesn't support JSON Schema",
        "AiError: JSON Mode couldn't be met",
    ],
)
async def test_workers_ai_json_mode_refused_asks_again_without_it(refusal: str):
    ai = FakeAi(
        RuntimeError(refusal),
        {"response": f"```json\n{GOOD_TEXT}\n```"},
        {"response": '{"entities": []}'},
    )
    extractor = workers(ai)
    extracted = await extractor.extract(CONVERSATION, KNOWN, NOW)
    assert [("response_format" in inputs) for _, inputs in ai.calls] == [True, False]
    assert ai.calls[1][1]["messages"] == expected_messages()
    assert extracted.candidates == GOOD["entities"]
    await extractor.extract(CONVERSATION, KNOWN, NOW)
    assert "response_format" not in ai.calls[2][1]


async def test_workers_ai_request_too_large_splits():
    ai = FakeAi(
        RuntimeError("AiError: 3006: Request is too large"),
        {"response": {"entities": [METRIC]}},
        {"response": {"entities": []}},
    )
    extracted = await workers(ai).extract(CONVERSATION, KNOWN, NOW)
    assert len(ai.calls) == 3 and extracted.candidates == [METRIC]


def test_extraction_result_defaults():
    assert ExtractionResult("x").failures == [] and ExtractionResult("x").calls == 0


async def test_workers_ai_reply_at_the_output_budget_counts_as_truncated():
    spent = {"prompt_tokens": 900, "completion_tokens": 1024}
    ai = FakeAi(
        {"response": {"entities": [METRIC]}, "usage": spent},
        {"response": {"entities": [METRIC]}},
        {"response": {"entities": [DECISION]}},
    )
    extracted = await workers(ai, model=LLAMA, max_tokens=1024).extract(CONVERSATION, KNOWN, NOW)
    assert len(ai.calls) == 3
    assert extracted.candidates == [METRIC, DECISION]
