"""Grounding against a long session shares the event loop (issue 39): the stage that checks
candidates against the whole conversation is built in bounded steps with turns for others
between them, reads the conversation's numbers once, and finds exactly what reading the
whole text at once found.

Structural, never a time: the characters each step examines, the turns given where the clock
stands still, how much text the number pattern reads. The wall-clock figures on the local
host are bench/hostile_text.py's.
"""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import Iterator

import pytest
from bench.hostile_text import hostile_messages

from entity_memory.domain import amounts
from entity_memory.domain.amounts import WrittenNumbers, mentions_of, number_values
from entity_memory.domain.pacing import MAX_CHARS_PER_YIELD, Pacer
from entity_memory.extraction import grounding, grounding_text
from entity_memory.extraction.base import Message
from entity_memory.extraction.grounding import _context_steps, _ground_steps, session_context
from entity_memory.extraction.grounding_text import (
    SLICE_CHARS,
    business_names,
    normalise_text,
    normalise_words,
)
from entity_memory.extraction.rules import extract_candidates
from entity_memory.extraction.validate import validate_candidates
from entity_memory.service.extraction import check as check_stage
from entity_memory.service.extraction.stage_data import Extracted

#: Pieces the random texts are made of: words, names a business pattern reads, numbers with
#: and without units, sentence ends, whitespace of several kinds, a final sigma, dashes.
PIECES = (
    "We", "run", "a", "studio", "called", "Tide", "Loom", "my", "shop", "is", "named",
    "Orrin", "from", "Here", "at", "Co.", "A.B", "42", "3.5", "1,250", "%", "x", "k", "$",
    ".", "!", "?", ",", " ", "  ", "\n", "\t", "\xa0", "ΟΔΟΣ", "—", "“", "_",
)  # fmt: skip


def random_texts(rng: random.Random) -> list[tuple[str, str]]:
    def text() -> str:
        return "".join(
            rng.choice(PIECES) + rng.choice(("", " ")) for _ in range(rng.randint(0, 40))
        )

    return [(rng.choice(("user", "assistant")), text()) for _ in range(rng.randint(1, 4))]


def test_written_numbers_answer_as_reading_the_text() -> None:
    rng = random.Random(7)
    stored = (0.0, 0.5, 1.0, 3.1, 12.0, 42.0, 0.42, 1250.0, 1.25, 4200.0, 0.035, float("inf"))
    for _ in range(2000):
        words = ("$42", "41.9", "3.5%", "1,250", "4.2k", "12 %", "3.1x", "ab")
        text = " ".join(rng.choice(words) for _ in range(rng.randint(0, 8)))
        written = WrittenNumbers.of((v, p) for v, p, _ in number_values(text))
        for value in (*stored, rng.uniform(0, 5000)):
            assert written.has(value) == bool(mentions_of(value, text)), (text, value)


def test_a_context_built_in_slices_is_the_whole_texts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cut at whitespace and before sentence ends, the slices' text, words, numbers and
    business names are those of the whole conversation read at once."""
    monkeypatch.setattr(grounding_text, "SLICE_CHARS", 5)
    rng = random.Random(11)
    for _ in range(3000):
        texts = random_texts(rng)
        ctx = grounding.grounding_context(texts)
        joined = "\n".join(content for _, content in texts)
        assert ctx.text == normalise_text(joined)
        assert ctx.words == normalise_words(joined)
        assert ctx.business == business_names(c for r, c in texts if r == "user")
        for value in (42.0, 0.42, 3.5, 0.035, 1250.0, 3500.0, 5.0):
            assert ctx.numbers.has(value) == bool(mentions_of(value, ctx.text)), (texts, value)


def test_building_the_context_of_a_1mb_session_is_done_in_bounded_steps() -> None:
    """Every step reads about SLICE_CHARS characters (up to the next whitespace or sentence
    end), and the whole session is read in many steps, not one."""
    messages = hostile_messages(1009)
    texts = [(m.role, m.content) for m in messages]
    steps = _context_steps(texts, (), ())
    sizes = []
    while True:
        try:
            sizes.append(next(steps))
        except StopIteration:
            break
    total = sum(len(c) for _, c in texts)
    assert max(sizes) <= SLICE_CHARS + 1_000  # a hostile sentence is at most 990 characters
    assert len(sizes) >= 3 * total // (SLICE_CHARS + 1_000)  # text, numbers, business names


def test_grounding_checks_one_candidate_a_step() -> None:
    messages = hostile_messages(30)
    inputs, _ = validate_candidates(extract_candidates(messages, []))
    assert inputs
    steps = list(_ground_steps(inputs, session_context(messages)))
    assert len(steps) == len(inputs)


class _Counting:
    """A compiled pattern that counts the characters its scans are given to read."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern, self.chars = pattern, 0

    def finditer(
        self, text: str, pos: int = 0, endpos: int | None = None
    ) -> Iterator[re.Match[str]]:
        self.chars += (len(text) if endpos is None else endpos) - pos
        return self.pattern.finditer(text, pos, len(text) if endpos is None else endpos)


def _number_chars_read(monkeypatch: pytest.MonkeyPatch, candidates: int) -> int:
    """Characters the number pattern reads grounding `candidates` metrics on a 100 KB session."""
    messages = hostile_messages(100)
    stated = " ".join(f"Lead cost {i} is ${40 + i}." for i in range(candidates))
    messages.append(Message(role="user", content=stated))
    inputs, _ = validate_candidates(
        [
            {"type": "metric", "name": f"Lead cost {i}", "content": f"Lead cost is ${40 + i}.",
             "source": f"Lead cost {i} is ${40 + i}.", "metadata": {"kpi": "CPA", "value": 40 + i}}
            for i in range(candidates)
        ]
    )  # fmt: skip
    counting = _Counting(amounts._NUMBER)
    monkeypatch.setattr(amounts, "_NUMBER", counting)
    kept = grounding.ground(inputs, session_context(messages))
    assert len(kept.kept) == candidates
    return counting.chars


def test_the_conversations_numbers_are_read_once_however_many_candidates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each number of each candidate was looked for by re-reading the whole conversation (a
    1 MB session held the host for seconds); now the conversation is read once."""
    one = _number_chars_read(monkeypatch, 1)
    many = _number_chars_read(monkeypatch, 40)
    assert many - one < 40 * 200  # each candidate's own text, not the 100 KB conversation


class _Recording(Pacer):
    def __init__(self) -> None:
        super().__init__(clock=lambda: 0.0)
        self.stretches: list[int] = []

    def restart(self) -> None:
        self.stretches.append(self.chars)
        super().restart()


def test_the_check_stage_gives_turns_where_the_clock_stands_still() -> None:
    """A Worker's clock does not move while code runs: characters bound each stretch."""
    messages = hostile_messages(400)
    candidates = extract_candidates(messages[-1:], [])
    pacer = _Recording()
    extracted = Extracted(extractor="rules", candidates=candidates)
    checked = asyncio.run(check_stage.check(extracted, messages, [], pacer))
    assert checked.inputs or checked.rejected
    total = sum(len(m.content) for m in messages)
    assert len(pacer.stretches) >= 3 * total // (MAX_CHARS_PER_YIELD + SLICE_CHARS + 1_000)
    assert max(pacer.stretches) < MAX_CHARS_PER_YIELD + SLICE_CHARS + 1_000
