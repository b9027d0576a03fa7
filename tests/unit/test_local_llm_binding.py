"""The local host's text-model binding (local/llm.mjs) speaks Workers AI on one side and
llama-server on the other: inputs mapped, replies reshaped, never invented. Run under node."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.unit.node_eval import node_eval, run_node


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


def test_how_a_server_ended_is_said_in_words() -> None:
    assert _node('llm.howItEnded(null, "SIGKILL")') == "killed by SIGKILL"
    assert _node("llm.howItEnded(1, null)") == "exited with code 1"


def test_a_server_that_keeps_dying_at_start_is_retried_less_and_less_often() -> None:
    delays = _node("[1, 2, 3, 4, 10].map(llm.restartDelayMs)")
    assert delays == sorted(delays) and delays[0] < delays[-1]


def test_a_server_setup_found_unusable_is_not_started_and_says_why(tmp_path: Path) -> None:
    """setup-llm's smoke test failed: the host runs no model server and gives the reason."""
    reason = (
        "llama-server (x86-64-avx2) cannot run here: failed before it was ready: killed by SIGILL"
    )
    (tmp_path / "llm.json").write_text(json.dumps({"unusable": reason}))
    server = node_eval(
        "llm.mjs",
        "llm",
        "(s => ({available: s.available, why: s.why, status: s.status()}))(llm.startTextServer())",
        {"ENTITY_MEMORY_CACHE": str(tmp_path)},
    )
    assert server["available"] is False
    assert "killed by SIGILL" in server["why"] and server["status"]["state"] == "off"


def test_a_server_that_dies_at_start_is_restarted_then_given_up_with_its_reason(
    tmp_path: Path,
) -> None:
    """A binary that dies by SIGILL before answering (a build for another CPU): each death is
    seen at once and restarted, and after three the model is given up, saying how it died.
    The stand-in binary only dies; no model answer is involved."""
    binary = tmp_path / "llama-server"
    binary.write_text("#!/bin/sh\necho 'ggml: illegal instruction here' >&2\nkill -ILL $$\n")
    binary.chmod(0o755)
    model = tmp_path / "model.gguf"
    model.write_bytes(b"")
    (tmp_path / "llm.json").write_text(json.dumps({"model": str(model), "server": str(binary)}))
    script = (
        "const alive = setInterval(() => {}, 1000);"  # the host's http server does this
        "const s = llm.startTextServer();"
        "const error = await s.ready.then(() => null, (e) => e.message);"
        "process.stdout.write(JSON.stringify({error, status: s.status()}));"
        "s.stop(); clearInterval(alive);"
    )
    done = run_node("llm.mjs", "llm", script, {"ENTITY_MEMORY_CACHE": str(tmp_path)})
    out = json.loads(done.stdout)
    assert out["status"]["state"] == "failed"
    assert out["status"]["restarts"] == 2  # three starts in all
    assert out["status"]["lastExit"]["how"] == "killed by SIGILL"
    assert "killed by SIGILL 3 times" in out["error"]
    assert "illegal instruction here" in out["error"]  # its last words
    assert done.stderr.count("killed by SIGILL; restarting it") == 2
