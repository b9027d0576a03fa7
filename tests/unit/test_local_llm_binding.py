"""The local host's text-model binding (local/llm.mjs) speaks Workers AI on one side and
llama-server on the other: inputs mapped, replies reshaped, never invented. Run under node."""

from __future__ import annotations

import json
from typing import Any

from tests.unit.node_eval import node_eval


def _node(expression: str) -> Any:
    return node_eval("llm.mjs", "llm", expression)


def test_workers_ai_inputs_become_a_llama_server_request() -> None:
    inputs = {
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 40,
        "temperature": 0,
        "repetition_penalty": 1.1,
        "frequency_penalty": 0.3,
        "response_format": {"type": "json_schema", "json_schema": {"type": "object"}},
    }
    body = _node(f"llm.chatBody({json.dumps(inputs)})")
    assert body["messages"] == inputs["messages"]
    assert (body["max_tokens"], body["temperature"]) == (40, 0)
    # Workers AI's name for it is not llama-server's.
    assert body["repeat_penalty"] == 1.1 and "repetition_penalty" not in body
    assert body["frequency_penalty"] == 0.3
    # The older models' bare schema is wrapped in the named form the server reads.
    assert body["response_format"]["json_schema"]["schema"] == {"type": "object"}


def test_a_prompt_without_messages_is_one_user_message_with_a_default_budget() -> None:
    body = _node('llm.chatBody({"prompt": "hello"})')
    assert body["messages"] == [{"role": "user", "content": "hello"}]
    assert body["max_tokens"] > 0


def test_a_reply_is_reshaped_not_rewritten() -> None:
    reply = {
        "choices": [{"message": {"content": '{"items": []}'}}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
    }
    shaped = _node(f"llm.workersAiReply({json.dumps(reply)}, true)")
    assert shaped == {
        "response": {"items": []},
        "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
    }
    cut = {"choices": [{"message": {"content": '{"items": [{"quo'}}], "usage": {}}
    assert _node(f"llm.workersAiReply({json.dumps(cut)}, true)")["response"] == '{"items": [{"quo'


def test_with_no_model_the_binding_fails_instead_of_answering() -> None:
    outcome = _node(
        "await llm.withLocalText({run: async () => 'platform'},"
        " llm.startTextServer({disabled: true}))"
        ".run(llm.LOCAL_TEXT_MODEL, {prompt: 'x'}).then(() => 'answered', (e) => e.message)"
    )
    assert outcome != "answered" and "--no-llm" in outcome
    other = _node(
        "await llm.withLocalText({run: async (m) => 'platform ' + m},"
        " llm.startTextServer({disabled: true})).run('@cf/other', {})"
    )
    assert other == "platform @cf/other"
