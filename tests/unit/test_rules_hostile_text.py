"""Hostile text against the rules (issue 39): long sentences of KPI words must not hold the
isolate, and markup is never a name.

What is asserted is structural, never a time: each step of detection examines at most one
sentence (at most MAX_SENTENCE characters), a look back from a KPI or an amount reads a bounded
window, and the pacer hands other requests a turn within MAX_CHARS_PER_YIELD characters even
where the clock stands still (a Worker's clock moves only across I/O). The wall-clock figures
on the host are bench/hostile_text.py's (whose sentences these are).
"""

from __future__ import annotations

import ast
import asyncio
import itertools
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from bench.hostile_text import hostile_messages, hostile_sentence

from entity_memory.domain.pacing import MAX_CHARS_PER_YIELD, YIELD_AFTER_S, Pacer
from entity_memory.extraction import rules
from entity_memory.extraction.base import Message
from entity_memory.extraction.rules import extract_candidates
from entity_memory.extraction.rules.extractor import TYPES, _detect, detect_all_cooperatively
from entity_memory.extraction.rules.mentions import MentionFinder
from entity_memory.extraction.rules.sentences import MAX_SENTENCE, split_turns


class Recording(Pacer):
    """A pacer that keeps how many characters each stretch between two turns examined."""

    def __init__(self, clock: object) -> None:
        super().__init__(clock=clock)  # type: ignore[arg-type]
        self.stretches: list[int] = []

    def restart(self) -> None:
        self.stretches.append(self.chars)
        super().restart()


def test_each_step_examines_at_most_one_sentence() -> None:
    steps = list(_detect(hostile_messages(12), MentionFinder([]), {t: {} for t in TYPES}))
    assert len(steps) >= 12
    assert max(steps) <= MAX_SENTENCE


def test_other_requests_get_a_turn_where_the_clock_stands_still() -> None:
    """A Worker's clock does not move while code runs: the characters bound the stretch."""
    pacer = Recording(clock=lambda: 0.0)
    messages = hostile_messages(60)
    asyncio.run(detect_all_cooperatively(messages, MentionFinder([]), pacer))
    total = sum(len(m.content) for m in messages)
    assert len(pacer.stretches) >= total // (MAX_CHARS_PER_YIELD + MAX_SENTENCE)
    assert max(pacer.stretches) < MAX_CHARS_PER_YIELD + MAX_SENTENCE


def test_other_requests_get_a_turn_once_the_time_is_spent() -> None:
    """Where the clock runs, a step that took the budget is followed by a turn for others."""
    ticks = itertools.count()
    pacer = Recording(clock=lambda: next(ticks) * 2 * YIELD_AFTER_S)
    asyncio.run(detect_all_cooperatively(hostile_messages(5), MentionFinder([]), pacer))
    assert len(pacer.stretches) >= 5
    assert max(pacer.stretches) <= MAX_SENTENCE


def _whole_prefix_searches(path: Path) -> list[str]:
    """`pattern.search(text[:i])` calls: a search over everything before a point (a window
    of constant size, `text[:60]`, is bounded)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "search"
            and node.args
            and isinstance(arg := node.args[0], ast.Subscript)
            and isinstance(arg.slice, ast.Slice)
            and arg.slice.lower is None
            and not isinstance(arg.slice.upper, ast.Constant)
        ):
            found.append(f"{path.name}:{node.lineno}")
    return found


def test_no_look_back_reads_the_whole_sentence() -> None:
    """A search over a sentence's whole prefix, once per KPI, made a sentence of KPI words
    quadratic; every look back goes through `ends_before` (a LOOKBACK window)."""
    modules = Path(rules.__file__).parent.glob("*.py")
    assert [site for path in modules for site in _whole_prefix_searches(path)] == []


def test_the_hostile_sentences_still_read_as_kpis() -> None:
    """Bounding the work does not stop the rules reading what the sentence states."""
    found = extract_candidates([Message(role="user", content="Our CPA is $42 this week.")], [])
    assert [(c["type"], c["metadata"]["value"]) for c in found] == [("metric", 42.0)]
    assert extract_candidates(hostile_messages(3), []) is not None


def test_markup_is_never_a_campaign_name() -> None:
    texts = (
        'The campaign "<img src=x onerror=alert(1)>" spends $40/day.',
        'The "<b>Harbor Rooms</b>" campaign is paused.',
        "Campaign <svg onload=alert(1)> has a $30/day budget.",
    )
    for text in texts:
        names = [c["name"] for c in extract_candidates([Message(role="user", content=text)], [])]
        assert not any("<" in n or ">" in n for n in names), (text, names)


class _Counting:
    """A compiled pattern that counts the characters its searches are given to read."""

    def __init__(self, pattern: re.Pattern[str], tally: list[int]) -> None:
        self._pattern, self._tally = pattern, tally

    def _span(self, text: str, pos: int = 0, endpos: int | None = None) -> None:
        self._tally[0] += (len(text) if endpos is None else min(endpos, len(text))) - pos

    def search(self, text: str, *args: int) -> re.Match[str] | None:
        self._span(text, *args)
        return self._pattern.search(text, *args)

    def finditer(self, text: str, *args: int) -> Iterator[re.Match[str]]:
        self._span(text, *args)
        return self._pattern.finditer(text, *args)

    def __getattr__(self, name: str) -> object:
        return getattr(self._pattern, name)


def _characters_searched(sentence: str) -> int:
    """Characters every `search` and `finditer` of the rules read for one sentence."""
    tally = [0]
    originals = []
    for module in list(sys.modules.values()):
        if not (module and module.__name__.startswith(rules.__name__ + ".")):
            continue
        if ".lexicon" in module.__name__:
            continue
        for name, value in vars(module).items():
            if isinstance(value, re.Pattern):
                originals.append((module, name, value))
                setattr(module, name, _Counting(value, tally))
    try:
        extract_candidates([Message(role="user", content=sentence)], [])
    finally:
        for module, name, value in originals:
            setattr(module, name, value)
    return tally[0]


def test_a_sentence_of_kpi_words_is_read_in_linear_work() -> None:
    """Twice the sentence, about twice the characters read (a search over the sentence once
    per KPI found in it reads four times as much)."""
    short = _characters_searched(hostile_sentence(400))
    long = _characters_searched(hostile_sentence(800))
    assert long < 2.5 * short, (short, long)


def test_a_run_of_abbreviations_is_split_in_linear_work() -> None:
    """A line of pieces that each end with an abbreviation is one run-on sentence; searching
    the whole run for the abbreviation at each piece (and re-joining it) made 96 KB of such a
    line take minutes. Twice the line, about twice the characters read."""
    short = _characters_searched("Plan A vs. " * 400)
    long = _characters_searched("Plan A vs. " * 800)
    assert long < 2.5 * short, (short, long)


def test_a_pass_over_the_whole_conversation_gives_turns_a_sentence_at_a_time() -> None:
    """A detector that reads every sentence again once all were read (the pain points' pass
    for problems said to be over) does so in steps of one sentence, not in one step over a
    whole 1 MB session."""
    messages = hostile_messages(40)
    steps = list(_detect(messages, MentionFinder([]), {t: {} for t in TYPES}))
    sentences = len(split_turns(messages))
    assert len(steps) >= 2 * sentences
    assert max(steps) <= MAX_SENTENCE
