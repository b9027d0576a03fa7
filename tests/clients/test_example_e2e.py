"""examples/buddy_agent.py runs two sessions against the local host; the second session's
system prompt carries what the first taught."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from .conftest import REPO

pytestmark = pytest.mark.e2e


def _memory_block(prompt: str) -> str:
    match = re.search(r"<entity_memory>.*?</entity_memory>", prompt, re.S)
    assert match, prompt
    return match.group(0)


def test_second_session_remembers_the_first(env: dict[str, str], user: str) -> None:
    done = subprocess.run(
        [sys.executable, "examples/buddy_agent.py", "--user", user, "--fresh"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    first = out.split("===== session 1: system prompt =====")[1].split("=====")[0]
    second = out.split("===== session 2: system prompt =====")[1].split("=====")[0]

    assert "- **" not in _memory_block(first)  # a new user: nothing remembered yet
    memory = _memory_block(second)
    assert "Campaign Alpha" in memory  # the campaign and its bidding switch
    assert "target CPA" in memory
    assert "bullet" in memory.lower()  # the reporting preference
    assert "Weekly check of Campaign Alpha" in second
