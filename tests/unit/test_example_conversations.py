"""The conversations the README's curl examples and examples/buddy_agent.py send to /extract
store no malformed name and no target as a value (issue 9), read from those files as they are."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

from bench.quality import malformed_name, stated_targets

from entity_memory.extraction.base import Message
from entity_memory.extraction.rules import extract_candidates
from entity_memory.extraction.validate import validate_candidates

ROOT = Path(__file__).resolve().parents[2]


def _readme_conversations() -> list[list[dict[str, str]]]:
    text = (ROOT / "README.md").read_text()
    bodies = re.findall(r"-d '(\{.*?\})'", text, flags=re.S)
    return [json.loads(b)["messages"] for b in bodies if '"messages"' in b]


def _buddy_conversations() -> list[list[dict[str, str]]]:
    tree = ast.parse((ROOT / "examples" / "buddy_agent.py").read_text())
    out = []
    for node in tree.body:
        if isinstance(node, ast.AnnAssign | ast.Assign):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            if any(isinstance(t, ast.Name) and t.id.startswith("SESSION_") for t in targets):
                turns = ast.literal_eval(node.value)  # type: ignore[arg-type]
                out.append(
                    [
                        m
                        for user, reply in turns
                        for m in (
                            {"role": "user", "content": user},
                            {"role": "assistant", "content": reply},
                        )
                    ]
                )
    return out


def _check(conversation: list[dict[str, str]]) -> list[dict[str, Any]]:
    messages = [Message(**m) for m in conversation]
    cands = extract_candidates(messages, [])
    targets = stated_targets("\n".join(m.content for m in messages))
    for c in cands:
        assert malformed_name(c["name"]) is None, c["name"]
        if c["type"] == "metric":
            assert c["metadata"]["value"] not in targets, c
    _, rejected = validate_candidates(cands)
    assert not rejected
    return cands


def test_readme_extract_examples() -> None:
    conversations = _readme_conversations()
    assert conversations, "the README shows an /extract example"
    for conversation in conversations:
        _check(conversation)


def test_buddy_agent_conversations() -> None:
    conversations = _buddy_conversations()
    assert len(conversations) >= 2
    first = _check(conversations[0])
    # Session 1 teaches a campaign with its budget, a decision, a complaint and a preference.
    assert {c["type"] for c in first} >= {"campaign", "decision", "pain_point", "preference"}
    campaign = next(c for c in first if c["type"] == "campaign")
    assert campaign["metadata"]["budget"] == 150
    for conversation in conversations[1:]:
        _check(conversation)
