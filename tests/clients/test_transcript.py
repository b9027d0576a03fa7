"""What the CLI and the hooks send to /extract: formats recognised, Claude Code noise dropped."""

from __future__ import annotations

import json
from pathlib import Path

from entity_memory_client import transcript

FIXTURE = Path(__file__).parent / "fixtures" / "claude_code_session.jsonl"
NOT_CONVERSATION = (
    "zeta",  # tool_use input, tool_result output, sub-agent line, compaction summary
    "Omega",  # the `summary` line
    "Thinkzone",  # a thinking block
    "Caveat",  # a meta line
    "command-name",  # a slash-command wrapper
    "local-command",
    "$97",
    "9.9x",
    "iVBOR",  # an image block
)


def test_claude_code_transcript_keeps_only_user_and_assistant_text() -> None:
    conv = transcript.parse(FIXTURE.read_text())
    assert conv.kind == "claude-code"
    assert conv.session_id == "5f0c2a7e-1b2d-4c3e-9f8a-0d1e2f3a4b5c"
    assert conv.messages is not None
    roles = [m["role"] for m in conv.messages]
    assert roles == ["user", "assistant"] * 4  # consecutive turns of one role merged
    text = "\n".join(m["content"] for m in conv.messages)
    for word in NOT_CONVERSATION:
        assert word not in text, word
    assert conv.messages[0]["content"].startswith("Our main campaign is Campaign Alpha")
    assert "Campaign Alpha is at a $42 CPA" in conv.messages[1]["content"]  # a text block
    assert "target CPA bidding" in conv.messages[2]["content"]  # a list of text blocks
    assert conv.messages[6]["content"] == (
        "I prefer short bullet-point reports with the numbers first."
    )


def test_torn_last_line_is_ignored() -> None:
    text = FIXTURE.read_text()
    conv = transcript.parse(text + '{"type":"user","message":{"role":"us')
    assert conv.messages is not None and len(conv.messages) == 8


def test_json_messages_and_plain_text() -> None:
    messages = [
        {"role": "user", "content": "Campaign Beta CPA is $30"},
        {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
        {"role": "tool", "content": "dropped"},
    ]
    conv = transcript.parse(json.dumps(messages))
    assert conv.kind == "messages"
    assert conv.messages == [
        {"role": "user", "content": "Campaign Beta CPA is $30"},
        {"role": "assistant", "content": "ok"},
    ]
    assert transcript.parse(json.dumps({"messages": messages})).messages == conv.messages

    plain = transcript.parse("user: I prefer weekly reports\nassistant: noted\n")
    assert plain.kind == "text" and plain.messages is None
    assert plain.transcript is not None and plain.transcript.startswith("user: I prefer")
    assert transcript.parse("   \n").empty


def test_fit_respects_the_service_limits_and_keeps_the_newest_part() -> None:
    many = [{"role": "user", "content": f"message {i}"} for i in range(2500)]
    conv = transcript.parse(json.dumps(many))
    assert conv.messages is not None and len(conv.messages) == transcript.MAX_MESSAGES
    assert conv.messages[-1]["content"] == "message 2499" and conv.truncated == 500
    assert conv.messages[0]["content"] == "message 500"
    long_text = "user: old words\n" + "user: filler\n" * 100_000 + "user: the newest words\n"
    plain = transcript.parse(long_text)
    assert plain.transcript is not None and plain.transcript.rstrip().endswith("newest words")
    huge = [{"role": "user", "content": "x" * 150_000}] * 10
    conv = transcript.parse(json.dumps(huge))
    assert conv.messages is not None
    assert all(len(m["content"]) <= transcript.MAX_CONTENT for m in conv.messages)
    assert sum(len(m["content"]) for m in conv.messages) <= transcript.MAX_BODY_CHARS
