"""The host's answer to production's text models from an upstream (local/upstream_llm.mjs): the
request goes on in OpenAI's form under production's id, the reply comes back in the shape
Workers AI documents for that model, nothing is invented. Run under node."""

from __future__ import annotations

import json
from typing import Any

from tests.unit.node_eval import node_eval

GLM = "@cf/zai-org/glm-4.7-flash"


def _node(expression: str) -> Any:
    return node_eval("upstream_llm.mjs", "up", expression)


def test_the_request_keeps_production_s_id_and_its_inputs() -> None:
    inputs = {
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 900,
        "reasoning_effort": "low",
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "reply", "schema": {"type": "object"}, "strict": False},
        },
    }
    body = _node(f"up.upstreamBody({json.dumps(GLM)}, {json.dumps(inputs)})")
    assert body["model"] == GLM
    assert body["messages"] == inputs["messages"] and body["max_tokens"] == 900
    assert body["reasoning_effort"] == "low"
    assert body["response_format"] == inputs["response_format"]


def test_a_reasoning_model_s_reply_is_a_chat_completion_with_its_thinking_apart() -> None:
    reply = {
        "id": "x1",
        "choices": [
            {
                "message": {"role": "assistant", "content": None, "reasoning": "thinking..."},
                "finish_reason": "length",
            }
        ],
        "usage": {"prompt_tokens": 50, "completion_tokens": 900},
    }
    shaped = _node(f"up.chatCompletionReply({json.dumps(GLM)}, {json.dumps(reply)})")
    assert shaped["object"] == "chat.completion" and shaped["model"] == GLM
    choice = shaped["choices"][0]
    # Cut off while thinking: no answer, and the reply says so; nothing is filled in.
    assert choice["message"]["content"] is None
    assert choice["message"]["reasoning_content"] == "thinking..."
    assert choice["finish_reason"] == "length"
    assert shaped["usage"] == {"prompt_tokens": 50, "completion_tokens": 900, "total_tokens": 950}


def test_only_production_text_models_go_upstream() -> None:
    platform = "{run: async (m) => 'platform ' + m}"
    none = _node(
        f"await up.withUpstreamText({platform}, up.textUpstream('')).run({json.dumps(GLM)}, {{}})"
    )
    assert none == f"platform {GLM}"
    # An embedding call (no messages, no prompt) and the local model's id pass through.
    upstream = "up.textUpstream('http://127.0.0.1:9/v1')"
    embed = _node(
        f"await up.withUpstreamText({platform}, {upstream}).run('@cf/baai/bge-m3', {{text: ['a']}})"
    )
    assert embed == "platform @cf/baai/bge-m3"
    local = _node(
        f"await up.withUpstreamText({platform}, {upstream}).run('local/x', {{prompt: 'a'}})"
    )
    assert local == "platform local/x"


def test_an_upstream_that_cannot_be_reached_is_an_error_callers_retry() -> None:
    # Port 9 (discard) has nothing listening here: the call fails, it is not answered.
    outcome = _node(
        "await up.withUpstreamText({run: async () => 'platform'},"
        " up.textUpstream('http://127.0.0.1:9/v1'))"
        f".run({json.dumps(GLM)}, {{prompt: 'x'}}).then(() => 'answered', (e) => e.message)"
    )
    assert outcome != "answered" and "upstream" in outcome
