"""Name-agnostic figures of one replayed scenario: what the memory holds, whatever it named it.

The README's rules (bench/eval_scoring.py) match a stored entity to a gold row by name, which
undercounts a capable model: it names "Cost per signed case" what the gold calls "CPA", and its
facts are right. These figures never need the model's names to equal the gold's. Definitions
(`text` of an entity = its name, aliases, content and metadata serialised as JSON, lowercased,
whitespace collapsed; a gold fact is "in" an entity when it is a case-insensitive substring of
that text):

- facts current: the share of `expect_final` rows for which ONE stored entity of the row's type
  holds every fact of the row. Lenient by design (any entity of the type may hold them, so a
  short fact such as "paused" can be met by another campaign): an upper bound, read beside
  `attributed`.
- attributed: the same, but the entity must be one of those attributed to the row (below).
- changed current: facts current over the rows with `changed: true` only.
- evidence that an entity stands for a row (same type required): NAME words and FACT hits.
  Name words: the README's normalisation, a final "s" dropped from longer words, a few
  function words ("the", "of", "per", ...) dropped; one of the entity's names (name, aliases)
  and one of the row's (name, aliases) give evidence when one's words all occur in the other
  ("nb" in "nb invoice processing us") or they share at least two words and half the words
  of the shorter; the strength is the number of words shared, the best pair's. Fact hits:
  facts of the row that are distinctive (no other row of the type has a fact containing them
  or contained in them, and they hold a digit or at least two words, so "paused" alone proves
  nothing) and are in the entity. Each entity is attributed to the one row with the strongest
  evidence (name words first, then fact hits); when two rows tie, or nothing gives evidence,
  the entity is `unmatched` (a possible false positive, a gap in the gold, or a name and facts
  too far from the gold's: `--detail` lists them).
- duplicates per real entity: the sum over rows of (entities attributed - 1, when above 1),
  divided by the number of rows (ideal 0); `dup rows`: rows with two or more entities.
- unattributed: the share of rows with no entity attributed (lost, or held under a name and
  facts that give no evidence: read `--detail`).
- stored per real entity: stored entities / `expect_final` rows (a plain count).
- context contains / excludes: over all probes of the scenario pooled, the share of
  `expect_context_contains` strings present in the context block (case-insensitive), and of
  `expect_context_excludes` strings absent from it. `context_contains_probe_mean` is the
  README's rule 5 instead: the mean over probes of each probe's share.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.eval_scoring import normalise

Row = dict[str, Any]
Ent = dict[str, Any]

#: Words that say nothing about which thing a name names.
FUNCTION_WORDS = frozenset(
    {"a", "an", "the", "of", "for", "to", "in", "on", "and", "per", "by", "with"}
)
_DIGIT = re.compile(r"\d")


def text_of(entity: Ent) -> str:
    """Everything an entity says, lowercased, whitespace collapsed."""
    meta = json.dumps(entity.get("metadata") or {}, ensure_ascii=False, sort_keys=True)
    parts = [
        entity.get("name", ""),
        *(entity.get("aliases") or []),
        entity.get("content", ""),
        meta,
    ]
    return " ".join(" ".join(str(p) for p in parts).lower().split())


def _fact(fact: str) -> str:
    return " ".join(fact.lower().split())


def holds(entity_text: str, facts: Sequence[str]) -> bool:
    return all(_fact(f) in entity_text for f in facts)


def distinctive_facts(rows: Sequence[Row]) -> list[list[str]]:
    """Per row, its facts that can tell it apart from the other rows of its type."""
    out: list[list[str]] = []
    for i, row in enumerate(rows):
        others = [
            _fact(f)
            for j, other in enumerate(rows)
            if j != i and other["type"] == row["type"]
            for f in other.get("facts", [])
        ]
        keep = []
        for raw in row.get("facts", []):
            fact = _fact(raw)
            telling = bool(_DIGIT.search(fact)) or len(fact.split()) >= 2
            if telling and not any(fact in o or o in fact for o in others):
                keep.append(fact)
        out.append(keep)
    return out


def _words(name: str) -> frozenset[str]:
    words = (w[:-1] if len(w) > 3 and w.endswith("s") else w for w in normalise(name).split())
    return frozenset(w for w in words if w not in FUNCTION_WORDS)


def name_hit(entity: Ent, row: Row) -> int:
    """Words shared by the best pair of the entity's and the row's names (see the module)."""
    mine = [_words(n) for n in [entity.get("name", ""), *(entity.get("aliases") or [])]]
    best = 0
    for theirs in (_words(r) for r in [row.get("name", ""), *row.get("aliases", [])]):
        for words in mine:
            shared = len(theirs & words)
            if not shared:
                continue
            nested = theirs <= words or words <= theirs
            close = shared >= 2 and 2 * shared >= min(len(theirs), len(words))
            if nested or close:
                best = max(best, shared)
    return best


def attribute(stored: Sequence[Ent], rows: Sequence[Row]) -> list[int]:
    """For each stored entity, the index of the row it stands for, or -1 (none, or a tie)."""
    telling = distinctive_facts(rows)
    out = []
    for entity in stored:
        text = text_of(entity)
        scores = [
            (name_hit(entity, row), sum(f in text for f in telling[i]))
            if row["type"] == entity.get("type")
            else (0, 0)
            for i, row in enumerate(rows)
        ]
        best = max(scores, default=(0, 0))
        winners = [i for i, score in enumerate(scores) if score == best]
        out.append(winners[0] if best != (0, 0) and len(winners) == 1 else -1)
    return out


@dataclass
class Figures:
    """One scenario's name-agnostic figures (counts, so scenarios can be pooled)."""

    rows: int = 0
    facts_current: int = 0
    attributed_current: int = 0
    changed: int = 0
    changed_current: int = 0
    stored: int = 0
    extra: int = 0  # sum over rows of (attributed entities - 1) when above 1
    dup_rows: int = 0
    unattributed: int = 0
    unmatched: int = 0
    ctx_expected: int = 0
    ctx_present: int = 0
    ex_expected: int = 0
    ex_absent: int = 0
    #: Per row: name, type, attributed entity names, current (lenient), attributed current.
    detail: list[dict[str, Any]] = field(default_factory=list)
    unmatched_names: list[str] = field(default_factory=list)
    #: Per probe with strings to contain, the share present (rule 5 of the README).
    probe_shares: list[float] = field(default_factory=list)

    def add(self, other: Figures) -> None:
        for name in self.__dataclass_fields__:
            value = getattr(other, name)
            if isinstance(value, int):
                setattr(self, name, getattr(self, name) + value)
        self.probe_shares += other.probe_shares

    @staticmethod
    def share(part: int, whole: int) -> float | None:
        return part / whole if whole else None

    def summary(self) -> dict[str, float | int | None]:
        return {
            "facts_current": self.share(self.facts_current, self.rows),
            "attributed_current": self.share(self.attributed_current, self.rows),
            "changed_current": self.share(self.changed_current, self.changed),
            "duplicates_per_real": self.share(self.extra, self.rows),
            "dup_rows": self.dup_rows,
            "unattributed": self.share(self.unattributed, self.rows),
            "stored_per_real": self.share(self.stored, self.rows),
            "unmatched": self.unmatched,
            "context_contains": self.share(self.ctx_present, self.ctx_expected),
            "context_excludes": self.share(self.ex_absent, self.ex_expected),
            "context_contains_probe_mean": (
                sum(self.probe_shares) / len(self.probe_shares) if self.probe_shares else None
            ),
        }


def figures(scenario: dict[str, Any], stored: Sequence[Ent], contexts: Sequence[str]) -> Figures:
    """The figures of one scenario from its final stored entities and each probe's context."""
    rows = scenario["expect_final"]
    texts = [text_of(e) for e in stored]
    owner = attribute(stored, rows)
    fig = Figures(rows=len(rows), stored=len(stored))
    for i, row in enumerate(rows):
        facts = row.get("facts", [])
        mine = [k for k, r in enumerate(owner) if r == i]
        same_type = [k for k, e in enumerate(stored) if e.get("type") == row["type"]]
        current = any(holds(texts[k], facts) for k in same_type)
        attributed = any(holds(texts[k], facts) for k in mine)
        fig.facts_current += current
        fig.attributed_current += attributed
        if row.get("changed"):
            fig.changed += 1
            fig.changed_current += current
        fig.extra += max(0, len(mine) - 1)
        fig.dup_rows += len(mine) > 1
        fig.unattributed += not mine
        fig.detail.append(
            {
                "type": row["type"],
                "row": row["name"],
                "entities": [stored[k].get("name", "") for k in mine],
                "current": current,
                "attributed_current": attributed,
            }
        )
    fig.unmatched_names = [
        f"{e.get('type')}: {e.get('name')}" for e, r in zip(stored, owner, strict=True) if r < 0
    ]
    fig.unmatched = len(fig.unmatched_names)
    for probe, context in zip(scenario["probes"], contexts, strict=True):
        low = context.lower()
        wanted = probe.get("expect_context_contains", [])
        stale = probe.get("expect_context_excludes", [])
        fig.ctx_expected += len(wanted)
        present = sum(s.lower() in low for s in wanted)
        fig.ctx_present += present
        if wanted:
            fig.probe_shares.append(present / len(wanted))
        fig.ex_expected += len(stale)
        fig.ex_absent += sum(s.lower() not in low for s in stale)
    return fig
