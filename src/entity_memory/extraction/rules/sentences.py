"""Turns -> sentences, each knowing who said it and where, so detectors can ask "did the user
say this?" and "what came right before?" without re-reading the conversation."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from entity_memory.extraction.base import Message
from entity_memory.extraction.rules.lexicon import (
    ABBREVIATION,
    ROLE_LABEL,
)
from entity_memory.extraction.rules.lexicon.shapes import (
    BULLET,
    SENTENCE_END,
)

MAX_EXCERPT = 200
#: How far before a KPI, an amount or a strategy the rules look for the words that qualify it
#: ("target", "under", "$42", "switch to"): those cues are a few words long, and a bounded look
#: keeps one sentence's work linear in its length (a sentence of KPI words took quadratic time).
LOOKBACK = 60
#: Longer "sentences" are pasted data (logs, tables without pipes), not statements; skipping
#: them also bounds the work per sentence.
MAX_SENTENCE = 1000


def ends_before(pattern: re.Pattern[str], text: str, at: int) -> re.Match[str] | None:
    """`pattern` (anchored at its end, `$`) found ending at `at`, within LOOKBACK of it."""
    return pattern.search(text, max(0, at - LOOKBACK), at)


@dataclass(frozen=True)
class Sentence:
    text: str
    role: str
    #: Index of the turn in the conversation, and of the sentence within the turn.
    turn: int
    position: int

    @property
    def excerpt(self) -> str:
        """The sentence trimmed for provenance: whole words, at most ~200 characters."""
        if len(self.text) <= MAX_EXCERPT:
            return self.text
        return self.text[:MAX_EXCERPT].rsplit(" ", 1)[0] + "…"


def _lines(content: str) -> Iterator[str]:
    for line in content.splitlines():
        line = BULLET.sub("", ROLE_LABEL.sub("", line)).strip()
        # Table rows and code carry no sentence a person would quote as a fact.
        if line and not line.startswith(("|", "```", "#")):
            yield line


def _pieces(line: str) -> Iterator[str]:
    """`SENTENCE_END.split(line)`, one piece at a time."""
    start = 0
    for end in SENTENCE_END.finditer(line):
        yield line[start : end.start()]
        start = end.end()
    yield line[start:]


def _sentences(line: str) -> Iterator[str]:
    """The line's sentences, one at a time; a piece ending with an abbreviation ("vs.") runs
    on into the next. Only the end of the last piece is searched for one (the abbreviation is
    there or nowhere), and a run's pieces are joined once: searching the whole run and
    re-joining it at each piece made a line of "x vs. x vs. ..." quadratic (a 96 KB one took
    4 minutes)."""
    run: list[str] = []
    for piece in _pieces(line):
        piece = piece.strip()
        if run and ends_before(ABBREVIATION, run[-1], len(run[-1])):
            run.append(piece)
        elif piece:
            if run:
                yield " ".join(run)
            run = [piece]
    if run:
        yield " ".join(run)


def each_sentence(messages: list[Message]) -> Iterator[Sentence]:
    """Every sentence of every user and assistant turn, in order, one line at a time (a
    reader of a long conversation starts on its first sentence, not after splitting all)."""
    for turn, message in enumerate(messages):
        if message.role not in ("user", "assistant"):
            continue
        position = 0
        for line in _lines(message.content):
            for text in _sentences(line):
                if 3 <= len(text) <= MAX_SENTENCE:
                    yield Sentence(text, message.role, turn, position)
                    position += 1


def split_turns(messages: list[Message]) -> list[Sentence]:
    """Every sentence of every user and assistant turn, in order."""
    return list(each_sentence(messages))


#: Sources a fact keeps: the first statement and the latest ones (enough for provenance,
#: and a fact restated a thousand times costs no more).
MAX_SOURCES = 3


def add_sources(kept: list[Sentence], new: list[Sentence]) -> list[Sentence]:
    """`kept` then the `new` sentences it lacks, bounded to the first and the latest."""
    out = kept + [s for s in new if s not in kept]
    return out if len(out) <= MAX_SOURCES else [out[0], *out[-(MAX_SOURCES - 1) :]]
