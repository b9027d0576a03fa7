"""Grounding of a candidate's numbers, field by field: every stored number occurs in the
conversation, and a field that fails is dropped, never the whole entity.

A model (or a rule) that gets one number wrong usually gets the rest right: "CPA $41, goal
$38" with a goal said in another session is still a true CPA of 41. So each numeric field (a
metric's value and target, a campaign's budget and each `lastPerformance` figure) is checked on
its own and, when it fails, removed from the candidate with a machine-readable reason:

- `number_not_in_conversation`: the number is written nowhere in the session's conversation,
  nor is it the value memory already holds for that field of that entity (a restatement adds
  nothing, so it needs no new evidence). A capable model quotes one excerpt for an entity and
  summarises the figures of the whole session in it (a campaign's spend, demos and cost per
  demo from a report two turns earlier, a target agreed at the end), so the excerpt alone is
  too narrow a place to look;
- `value_tied_to_other_kpi`: a metric's value is written *attached* to another KPI's word and
  to none of its own ("$196 spent", "budget of $40", "31 clicks" read as a CPA). Attached
  means only currency signs and at most one small word between them; anything looser ("19
  bookings, roughly $73 apiece", "512% over the spring") is no evidence against the value, so
  wording alone never rejects a number the conversation states.

A content sentence that states a number the conversation never does and memory does not hold
for that entity (dates the model worked out aside), or a number dropped from its fields, is
replaced by the excerpt, which is the user's or assistant's own words
(`content_number_not_in_conversation`).

Pure functions over plain text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from pydantic import BaseModel, ConfigDict

from entity_memory.domain.amounts import (
    NumberMention,
    WrittenNumbers,
    mentions_of,
    numbers_in,
    same_number,
)
from entity_memory.domain.vocab import KPI_NAMES

#: A bare integer up to this in a content sentence may be a number the conversation wrote in
#: words ("three campaigns", "two weeks"): not checked.
SMALL_NUMBER = 12

# --- KPI mentions ------------------------------------------------------------------------------

#: KPI families as advertisers write them: the family a candidate's `kpi` belongs to and the
#: words that state it. Cost-per-anything is one family (a cost per lead is a CPA whose
#: acquisition is a lead), and counts, spend and budget are KPIs of their own so that an amount
#: spent is never read as a cost per acquisition.
#: "cost per" and what is paid for, up to three words ("cost per trial class booking"); per
#: click and per thousand impressions are KPIs of their own, and a linking word ends the thing.
_COST_PER = (
    r"cost per (?!(?:clicks?|thousand|mille|impressions?)\b)"
    r"(?:(?!(?:is|was|were|of|at|and|or|for|in|to|by|on|over|from)\b)[a-z-]+ ?){1,3}"
)
KPI_FAMILIES: tuple[tuple[str, str], ...] = (
    ("cpa", rf"{_COST_PER}|t?cpa|cpl|(?:per|a|each) (?:lead|sale|booking|signup|order|customer)"),
    ("roas", r"return on ad(?:vertising)? spend|t?roas"),
    ("ctr", r"click[ -]?through[ -]?rates?|ctr"),
    ("cpc", r"cost per click|cpc|(?:per|a|each) click"),
    ("cpm", r"cost per (?:mille|thousand(?: impressions)?)|cpm"),
    ("cvr", r"conversion rates?|cvr"),
    ("aov", r"average order value|aov|order value"),
    ("impression share", r"impression share"),
    ("spend", r"spend(?:ing)?|spent|ad cost|costs? us|cost"),
    ("budget", r"budgets?|a day|per day|daily|/day"),
    ("revenue", r"revenue|sales value|conversion value"),
    ("clicks", r"clicks?"),
    ("impressions", r"impressions?"),
    ("conversions", r"conversions?|leads?|sales|bookings?|signups?|sign-ups?|orders?|calls?"),
)
_FAMILY_RES = [
    (family, re.compile(rf"(?<![\w-])(?:{p})(?![\w-])", re.I)) for family, p in KPI_FAMILIES
]
_KPI_NAME_RES = [(re.compile(rf"^(?:{p})$", re.I), name) for p, name in KPI_NAMES]
#: What may stand between a number and the KPI word it is attached to: currency signs and at
#: most one linking word ("$196 spent", "spend of $196", "budget: $40", "40 a day").
_ATTACHED_GAP = re.compile(r"[\s$€£:=]*(?:(?:of|is|was)[\s$€£]*)?", re.I)
#: A number followed by these is a price per unit ("tickets at $14 each"), not a total.
_PER_UNIT = re.compile(r"\s*(?:each|apiece|a piece)\b", re.I)


class KpiMention(BaseModel):
    model_config = ConfigDict(frozen=True)

    family: str
    start: int
    end: int


def kpi_family(kpi: str) -> str | None:
    """The family of a candidate's `kpi` ("Cost per lead" -> "cpa"), None when unknown."""
    text = " ".join(kpi.lower().split())
    for pattern, name in _KPI_NAME_RES:
        if pattern.match(text):
            text = name.lower()
            break
    for family, pattern in _FAMILY_RES:
        if pattern.fullmatch(text) or pattern.search(text):
            return family
    return None


def kpi_mentions(text: str) -> list[KpiMention]:
    """Every KPI word in `text`; where two overlap the earlier family in KPI_FAMILIES wins."""
    found: list[KpiMention] = []
    for family, pattern in _FAMILY_RES:
        for m in pattern.finditer(text):
            if not any(m.start() < k.end and k.start < m.end() for k in found):
                found.append(KpiMention(family=family, start=m.start(), end=m.end()))
    return sorted(found, key=lambda k: k.start)


def _attached(number: NumberMention, kpi: KpiMention, text: str) -> bool:
    gap = text[number.end : kpi.start] if kpi.start >= number.end else text[kpi.end : number.start]
    return _ATTACHED_GAP.fullmatch(gap) is not None


def tied_to_other_kpi(kpi: str, value: float, excerpt: str) -> bool:
    """Every occurrence of `value` in the excerpt is attached to a KPI word of another family
    and none to its own ("$196 spent" is no CPA). A KPI outside our vocabulary, or a number
    attached to no KPI word, is never held against the value."""
    family = kpi_family(kpi)
    occurrences = mentions_of(value, excerpt)
    if family is None or not occurrences:
        return False
    kpis = kpi_mentions(excerpt)
    for number in occurrences:
        if _PER_UNIT.match(excerpt, number.end):
            return False
        attached = {k.family for k in kpis if _attached(number, k, excerpt)}
        if not attached or family in attached:
            return False
    return True


def value_tied_to_kpi(kpi: str, value: float, excerpt: str) -> bool:
    """The excerpt states `value` and does not tie it to another KPI only."""
    return bool(mentions_of(value, excerpt)) and not tied_to_other_kpi(kpi, value, excerpt)


# --- where a number may be stated --------------------------------------------------------------


def restates(value: float, known: object) -> bool:
    """`value` is what memory already holds for the field (a number, or a history of them)."""
    if isinstance(known, bool) or not isinstance(known, int | float):
        return False
    return same_number(float(value), float(known))


# --- numbers in a content sentence -------------------------------------------------------------

_DATES = re.compile(r"\b\d{4}-\d{2}-\d{2}\b|\b(?:19|20)\d{2}\b")


def unsupported_numbers(
    content: str, conversation: WrittenNumbers, held: Iterable[float] = ()
) -> list[float]:
    """Numbers `content` states that the conversation never writes and that are not `held`
    (what memory holds for the entity): ISO dates and years (a model turns "last week" into a
    date) and small bare integers (numbers written in words) aside; a percentage may stand for
    a ratio written otherwise (340% for 3.4x)."""
    out: list[float] = []
    held = list(held)
    for number in numbers_in(_DATES.sub(" ", content)):
        if not number.percent and number.value <= SMALL_NUMBER and number.value.is_integer():
            continue
        if any(same_number(number.value, h) for h in held):
            continue
        if conversation.has(number.value):
            continue
        if number.percent and conversation.has(number.value / 100):
            continue
        out.append(number.value)
    return out


def numeric_fields(metadata: Mapping[str, object]) -> list[tuple[str, float]]:
    """(field path, number) of every number a candidate would store in its metadata: value,
    target, the budgets and limits, and each `lastPerformance` figure."""
    out: list[tuple[str, float]] = []
    for key in ("value", "target", "budget", "monthlyBudget", "budgetCap", "budgetFloor"):
        value = metadata.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            out.append((key, float(value)))
    performance = metadata.get("lastPerformance")
    if isinstance(performance, Mapping):
        for name, value in performance.items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                out.append((f"lastPerformance.{name}", float(value)))
    return out
