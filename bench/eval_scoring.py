"""Scoring rules of the evaluation set (../shared/eval/README.md), as reusable functions.

Entities here are plain dicts with at least `type` and `name` (extracted candidates or stored
entities; `aliases`, `content` and `metadata` are used where a rule needs them). Gold rows are
the dicts of `expect_entities`, `expect_final` or a probe's `expect_top`.

- `normalise`: lowercase, punctuation to spaces, whitespace collapsed.
- `match_length`: how well one entity matches one row (0 = no match): equal to, or containing as
  whole words, the row's name or one of its aliases; the longest matched string wins.
- `assign`: each entity to its best row (rule: longest matched string), so one entity counts once.
- `recall`, `false_positives`: rules 1 and 6; `duplicates`, `changed_current`: rules 2 and 3;
  `hit_at_k`, `context_contains`, `context_excludes`: rules 4 and 5.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

Row = dict[str, Any]
Ent = dict[str, Any]

TYPES: tuple[str, ...] = ("campaign", "metric", "decision", "pain_point", "preference")


def normalise(text: str) -> str:
    """Lowercase, punctuation (and `_`) to spaces, whitespace collapsed."""
    return " ".join(re.sub(r"[\W_]+", " ", text.lower()).split())


def contains_words(haystack: str, needle: str) -> bool:
    """`needle` equals `haystack` or occurs in it as whole words (both already normalised)."""
    if not needle:
        return False
    return f" {needle} " in f" {haystack} "


def row_names(row: Row) -> list[str]:
    """The row's normalised name and aliases, without empties or repeats."""
    out: list[str] = []
    for raw in [row.get("name", ""), *row.get("aliases", [])]:
        norm = normalise(raw)
        if norm and norm not in out:
            out.append(norm)
    return out


def match_length(entity: Ent, row: Row, *, lenient: bool = False) -> int:
    """Length of the longest row name/alias that the entity's name equals or contains as
    whole words; 0 when the types differ or nothing matches.

    Lenient (rule 1's variant): the entity's own aliases/keywords count like its name, and a
    row whose facts all appear in the entity's text matches too (with length 1)."""
    if entity.get("type") != row.get("type"):
        return 0
    names = [normalise(entity.get("name", ""))]
    if lenient:
        names += [normalise(a) for a in [*entity.get("aliases", []), *entity.get("keywords", [])]]
    best = 0
    for candidate in row_names(row):
        if any(contains_words(n, candidate) for n in names if n):
            best = max(best, len(candidate))
    if not best and lenient and row.get("facts") and facts_present(entity, row["facts"]):
        best = 1
    return best


def entity_text(entity: Ent) -> str:
    """What fact checks search: `content` plus `metadata` serialised as JSON, lowercased."""
    meta = json.dumps(entity.get("metadata", {}), ensure_ascii=False, sort_keys=True)
    return f"{entity.get('content', '')}\n{meta}".lower()


def facts_present(entity: Ent, facts: Iterable[str]) -> bool:
    text = entity_text(entity)
    return all(f.lower() in text for f in facts)


def assign(entities: Sequence[Ent], rows: Sequence[Row], *, lenient: bool = False) -> list[int]:
    """For each entity, the index of the row it matches best (longest match), or -1.
    Ties go to the earlier row."""
    out: list[int] = []
    for entity in entities:
        best, best_len = -1, 0
        for i, row in enumerate(rows):
            length = match_length(entity, row, lenient=lenient)
            if length > best_len:
                best, best_len = i, length
        out.append(best)
    return out


def matched_rows(
    entities: Sequence[Ent], rows: Sequence[Row], *, lenient: bool = False
) -> list[list[int]]:
    """For each row, the indexes of the entities assigned to it."""
    per_row: list[list[int]] = [[] for _ in rows]
    for ei, ri in enumerate(assign(entities, rows, lenient=lenient)):
        if ri >= 0:
            per_row[ri].append(ei)
    return per_row


# --- rule 1 and 6: extraction recall and possible false positives ------------------------------


@dataclass
class Tally:
    """Matched / total counts, per type, overall and for `importance: high` rows."""

    hit: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    total: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def add(self, key: str, matched: bool) -> None:
        self.total[key] += 1
        self.hit[key] += int(matched)

    def merge(self, other: Tally) -> None:
        for k, v in other.total.items():
            self.total[k] += v
        for k, v in other.hit.items():
            self.hit[k] += v

    def rate(self, key: str) -> float | None:
        return self.hit[key] / self.total[key] if self.total.get(key) else None


def recall(entities: Sequence[Ent], rows: Sequence[Row], *, lenient: bool = False) -> Tally:
    """Rule 1 for one session: which `expect_entities` rows an extracted entity matched.
    Keys: each type, `overall`, `high`."""
    per_row = matched_rows(entities, rows, lenient=lenient)
    tally = Tally()
    for row, ents in zip(rows, per_row, strict=True):
        hit = bool(ents)
        tally.add(row["type"], hit)
        tally.add("overall", hit)
        if row.get("importance") == "high":
            tally.add("high", hit)
    return tally


def false_positives(entities: Sequence[Ent], rows: Sequence[Row]) -> list[Ent]:
    """Rule 6: the entities that match no row."""
    return [e for e, ri in zip(entities, assign(entities, rows), strict=True) if ri < 0]


def band(importance: float) -> str:
    """The SPEC's importance bands: 0.9+ high (0.85 rounds there), 0.5-0.8 medium, <0.5 low."""
    if importance >= 0.85:
        return "high"
    return "medium" if importance >= 0.5 else "low"


def importance_agreement(entities: Sequence[Ent], rows: Sequence[Row]) -> tuple[int, int]:
    """(agreeing, compared): for each row matched by an entity, whether the entity's importance
    falls in the row's band (the best-scored entity when several match)."""
    agree = total = 0
    for row, ents in zip(rows, matched_rows(entities, rows), strict=True):
        if not ents or "importance" not in row:
            continue
        total += 1
        best = max(float(entities[i].get("importance", 0.5)) for i in ents)
        agree += band(best) == row["importance"]
    return agree, total


def facts_in_matched(entities: Sequence[Ent], rows: Sequence[Row]) -> tuple[int, int]:
    """(rows whose facts all appear in a matching entity, rows matched): how much of what the
    gold says about an entity its extracted text carries."""
    ok = total = 0
    for row, ents in zip(rows, matched_rows(entities, rows), strict=True):
        if not ents:
            continue
        total += 1
        ok += any(facts_present(entities[i], row.get("facts", [])) for i in ents)
    return ok, total


# --- rules 2-5: for the end-to-end replay -------------------------------------------------------


def duplicates(stored: Sequence[Ent], final_rows: Sequence[Row]) -> dict[str, Any]:
    """Rule 2: stored entities per `expect_final` row: counts, mean, share exactly 1, share 0."""
    counts = [len(ents) for ents in matched_rows(stored, final_rows)]
    n = len(counts) or 1
    return {
        "counts": counts,
        "mean": sum(counts) / n,
        "exactly_one": sum(c == 1 for c in counts) / n,
        "lost": sum(c == 0 for c in counts) / n,
    }


def changed_current(stored: Sequence[Ent], final_rows: Sequence[Row]) -> dict[str, Any]:
    """Rule 3 (facts part): for rows with `changed: true`, the share whose matched stored
    entity (any of them, if duplicated) contains every current fact. Also lists, per row,
    the matched entities so the caller can check versions and the ledger."""
    per_row = matched_rows(stored, final_rows)
    rows = [(i, r) for i, r in enumerate(final_rows) if r.get("changed")]
    ok = 0
    detail = []
    for i, row in rows:
        ents = [stored[j] for j in per_row[i]]
        current = any(facts_present(e, row.get("facts", [])) for e in ents)
        ok += current
        detail.append({"row": row["name"], "type": row["type"], "current": current, "ents": ents})
    return {"rate": ok / len(rows) if rows else None, "n": len(rows), "rows": detail}


def hit_at_k(
    retrieved: Sequence[Ent], expect_top: Sequence[Row], k: int, final_rows: Sequence[Row] = ()
) -> float:
    """Rule 4: the share of `expect_top` entities among the first k retrieved. A probe row has
    only type and name; its aliases are taken from the `expect_final` row of that name."""
    if not expect_top:
        return 1.0
    by_key = {(r["type"], normalise(r["name"])): r for r in final_rows}
    top = list(retrieved[:k])
    hits = 0
    for want in expect_top:
        row = by_key.get((want["type"], normalise(want["name"])), want)
        if any(match_length(e, row) for e in top):
            hits += 1
    return hits / len(expect_top)


def context_contains(context: str, strings: Sequence[str]) -> float:
    """Rule 5: the share of strings present (case-insensitive) in the context block."""
    if not strings:
        return 1.0
    low = context.lower()
    return sum(s.lower() in low for s in strings) / len(strings)


def context_excludes(context: str, strings: Sequence[str]) -> float:
    """Rule 5: the share of stale strings absent from the context block."""
    if not strings:
        return 1.0
    low = context.lower()
    return sum(s.lower() not in low for s in strings) / len(strings)
