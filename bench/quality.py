"""Quality checks on extracted entities that recall cannot see: malformed names and stored
numbers that contradict the gold facts. Kept independent of the extractor's own word lists, so
the bench does not grade the extractor with its own rules.

- `malformed_name`: a name that ends on a function word ("Lower bids to"), contains a copula or
  auxiliary ("Campaign is"), ends on dangling punctuation, or has unbalanced quotes/brackets.
- `wrong_values`: for a metric matched to a gold row, a `value` that is not among the numbers of
  the row's facts (when the facts state numbers), and separately a value that the session's
  text states as a target ("target 4.0", "4.0 target", "want it under $30").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

_FUNCTION = frozenset(
    """a an the this that these those my our your their its to for and or but nor of with
    without from by at in on into over under about as than then so if when while because is
    are was were be been being am do does did has have had will would can could should may
    might must it they we i you he she them us me which who what not no very just around
    through across along behind beyond near toward towards within during after before between
    against among above below upon where""".split()
)
_COPULAS = frozenset("is are was were be been am has have had does did isn't aren't".split())
_NUM = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")
_TARGET_CUE = re.compile(
    r"(?:\b(?:target|goal|aim|want|need|should|under|below|above)\b[^.\d]{0,20}"
    r"[$€£]?\s?(?P<a>\d+(?:,\d{3})*(?:\.\d+)?))|"
    r"(?:[$€£]?\s?(?P<b>\d+(?:,\d{3})*(?:\.\d+)?)\s*(?:%|x)?\s+(?:target|goal)\b)",
    re.I,
)


def malformed_name(name: str) -> str | None:
    """Why the name is malformed, or None."""
    raw = [w.strip(".,'\u2019\"") for w in name.split()]
    ws = [w.lower() for w in raw]
    if not ws:
        return "empty"
    if ws[-1] in _FUNCTION and not (len(raw[-1]) >= 2 and raw[-1].isupper()):  # "US" is a code
        return f"ends on {ws[-1]!r}"
    if hit := next((w for w in ws if w in _COPULAS), None):
        return f"contains {hit!r}"
    if name.rstrip().endswith(("-", ",", ":", ";", "/", "&", "(")):
        return "ends on punctuation"
    if name.count("(") != name.count(")") or name.count('"') % 2:
        return "unbalanced brackets or quotes"
    return None


def numbers(text: str) -> set[float]:
    return {float(n.replace(",", "")) for n in _NUM.findall(text)}


def stated_targets(text: str) -> set[float]:
    """Numbers the text states as targets or goals."""
    out = set()
    for m in _TARGET_CUE.finditer(text):
        out.add(float((m.group("a") or m.group("b")).replace(",", "")))
    return out


def wrong_values(
    entities: Sequence[dict[str, Any]],
    rows: Sequence[dict[str, Any]],
    assignment: Sequence[int],
    session_text: str,
) -> tuple[list[str], list[str]]:
    """(values contradicting the matched gold row's facts, values that are stated targets)."""
    contradict: list[str] = []
    targets_as_values: list[str] = []
    targets = stated_targets(session_text)
    measured = numbers(session_text) - targets
    for entity, ri in zip(entities, assignment, strict=True):
        meta = entity.get("metadata") or {}
        value = meta.get("value") if entity.get("type") == "metric" else None
        if not isinstance(value, int | float):
            continue
        if value in targets and value not in measured:
            targets_as_values.append(f"{entity['name']}: value {value:g} is a stated target")
        if ri < 0:
            continue
        gold = set().union(*(numbers(f) for f in rows[ri].get("facts", []))) or None
        if gold is not None and value not in gold:
            contradict.append(f"{entity['name']}: value {value:g}, gold facts {sorted(gold)}")
    return contradict, targets_as_values
