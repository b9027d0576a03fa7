"""The `<entity_memory>` block injected into an agent's prompt, under a token budget.

The SPEC's `assemble_entity_context` (section order, labels, five per type, a token budget),
with what an agent needs to act on a memory rather than merely read it:

- each entity says when it was true ("as of" its last update), so old facts read as old;
- a line is the entity's current fields (a campaign's strategy, budget and status, a
  decision's action and outcome, a preference's value), and its stored sentence only where
  that says a word or an amount more: nothing is said twice;
- a metric shows its value, target and its dated series (the first observation, then the last
  few, improving or worsening from first to last by the KPI's direction), so "since the first
  quarter" and "at its peak against now" read off the block; metrics of one campaign stand together;
- a decision on a campaign shows its measured outcome where the memory holds it: that campaign's
  metric before and after the decision ("since 2026-05-03: CPA $52 -> $41 improving");
- a resolved pain point is left out, unless the task is about it (then it is marked resolved);
- stored text is data: line breaks are folded and anything that would close or reopen the block
  is neutralised, so a remembered sentence can never pose as instructions outside it;
- a section whose first item would pass the budget is left out instead of leaving an empty
  header behind; the budget is counted with the one token estimate (right for CJK text too).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from entity_memory.domain.amounts import CURRENCY_CODES, amount
from entity_memory.domain.fence import neutralise
from entity_memory.domain.kind import (
    EntityKind,
    MeasuredSeries,
    addressed_type,
    all_kinds,
    in_sections,
    is_kind,
    kind_of,
    link_target_type,
)
from entity_memory.domain.kinds.metric import SERIES_SHOWN
from entity_memory.domain.links import stated_campaigns
from entity_memory.domain.models import BaseEntity
from entity_memory.domain.task_dates import stored_day
from entity_memory.domain.text import STOP_WORDS, estimate_tokens, normalize_name, tokenize
from entity_memory.domain.trends import trend_of

ITEMS_PER_TYPE = 5


__all__ = ["SERIES_SHOWN", "assemble_entity_context", "estimate_tokens"]


def _decided_on(decision: BaseEntity, campaign: str) -> bool:
    """The decision names the campaign (in the campaigns its fields state, its name or its
    content)."""
    wanted = normalize_name(campaign)
    if any(normalize_name(str(a)) == wanted for a in stated_campaigns(decision)):
        return True
    terms = set(tokenize(campaign))
    text = set(tokenize(f"{decision.name} {decision.content}"))
    return bool(terms) and terms <= text


def _decided_at(decision: BaseEntity) -> int:
    """When the decision was said: its first stored time, or an earlier time its provenance
    gives (a client recording a decision taken last month says so in `provenance[].at`)."""
    return min([decision.created_at, *(p.at for p in decision.provenance if p.at is not None)])


def decision_outcome(decision: BaseEntity, series: Sequence[MeasuredSeries]) -> str:
    """`since 2026-05-03: CPA $52 -> $41 improving` for each metric of a campaign the decision
    is about that was observed both before and after it; "" where the memory cannot say."""
    made = _decided_at(decision)
    outcomes = []
    for measured in series:
        campaign = measured.campaign
        if not campaign or not _decided_on(decision, campaign):
            continue
        before = [v for at, v in measured.points if at <= made]
        after = [v for at, v in measured.points if at > made]
        if not before or not after:
            continue
        _, trend = trend_of(measured.kpi, before[-1], after[-1])
        unit = measured.unit
        change = (
            f"{neutralise(measured.kpi)} {amount(before[-1], unit)} -> {amount(after[-1], unit)}"
        )
        outcomes.append(change if trend == "unknown" else f"{change} {trend}")
    if not outcomes:
        return ""
    return f"since {stored_day(made)}: " + ", ".join(outcomes)


def _entry(
    item: BaseEntity,
    kind: EntityKind,
    series: Sequence[MeasuredSeries] = (),
    currency: str | None = None,
) -> str:
    """The entity's line: its name, notes (campaign, resolved, as of), then its kind's facts
    (domain/kinds/) and its sentence where that says more than they do."""
    notes = []
    campaign = kind.campaign_noted(item)
    if campaign:
        notes.append(neutralise(campaign))
    if kind.is_resolved(item):
        notes.append("resolved")
    as_of = stored_day(item.updated_at)
    if as_of:
        notes.append(f"as of {as_of}")
    head = f"**{neutralise(item.name)}**" + (f" ({', '.join(notes)})" if notes else "")
    content = neutralise(item.content)
    said = normalize_name(f"{item.name} | {content}")
    facts = neutralise(kind.facts(item, said, currency))
    # Only what the sentence does not already say (a fact repeated verbatim is noise);
    # a series read after the sentence is always given.
    if not kind.facts_after_sentence and facts.lower() in content.lower():
        facts = ""
    if facts and not _says_more(content, f"{item.name} {' '.join(notes)} {facts}"):
        content = ""  # the line is the fields: the sentence says nothing they do not
    if facts:
        first, last = (
            (content, f"[{facts}]") if kind.facts_after_sentence else (f"[{facts}]", content)
        )
        content = f"{first} {last}".strip()
    if kind.shows_outcome:
        outcome = decision_outcome(item, series)
        if outcome:
            content = f"{content} [{outcome}]" if content else f"[{outcome}]"
    return f"- {head}: {content}\n" if content else f"- {head}\n"


#: An amount as written, its currency or percent sign kept: "$36" says more than "36".
_AMOUNT = re.compile(
    r"[$€£¥]\s?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?\s?%"
)
#: The words ranking drops that say nothing a line's fields need: articles, "to be", a few
#: prepositions. Every other word it drops ("not", "down", "until", "next", "week") can
#: change what a sentence says, so a sentence holding one says more than its fields.
_FILLER = frozenset(
    "a an the is are was were be been being it its this that these those of to for on in at "
    "by as and with from".split()
)
_SENSE_WORDS = STOP_WORDS - _FILLER
_WORD = re.compile(r"[a-z]+")


def _terms_and_amounts(text: str) -> set[str]:
    amounts = {a.replace(" ", "") for a in _AMOUNT.findall(text)}
    senses = _SENSE_WORDS.intersection(_WORD.findall(text.lower()))
    return set(tokenize(text)) | amounts | senses


def _says_more(content: str, known: str) -> bool:
    """Whether the sentence holds a word or an amount that the name and fields do not (issue
    22: the line comes from the fields, `content` only where it says more)."""
    return not _terms_and_amounts(content) <= _terms_and_amounts(known)


def _about(item: BaseEntity, task_terms: set[str]) -> bool:
    return bool(task_terms & set(tokenize(item.name)))


def _campaign_grouped(items: list[BaseEntity], kind: EntityKind) -> list[BaseEntity]:
    """Entities of one campaign together (a metric's), campaigns in the order of their
    best-ranked entity."""
    order: dict[str, int] = {}
    for item in items:
        order.setdefault(kind.campaign_noted(item) or "", len(order))
    return sorted(items, key=lambda i: order[kind.campaign_noted(i) or ""])


def _groups(
    grouped: dict[str, list[BaseEntity]],
    links: Mapping[str, Sequence[str]],
    addresses: Mapping[str, Sequence[str]],
) -> dict[str, list[BaseEntity]]:
    """The lines shown under another's, taken out of their own sections: under
    "campaign:<id>", its metrics, decisions and pain points (each under the first of its
    linked campaigns in the block); under "pain_point:<id>", the decisions taken against it
    that no campaign shows."""
    target, pain = link_target_type(), addressed_type()
    shown = {c.id for c in grouped.get(target, [])[:ITEMS_PER_TYPE]}
    under: dict[str, list[BaseEntity]] = {}
    for entity_type in (k.type for k in all_kinds() if k.member_label):
        kept = []
        for item in grouped.get(entity_type, []):
            linked = [c for c in links.get(f"{entity_type}:{item.id}", ()) if c in shown]
            if linked:
                under.setdefault(f"{target}:{linked[0]}", []).append(item)
            else:
                kept.append(item)
        grouped[entity_type] = kept
    pains = {p.id for p in grouped.get(pain, [])[:ITEMS_PER_TYPE]}
    for fixer in (k.type for k in all_kinds() if k.addresses_pain_points):
        kept = []
        for item in grouped.get(fixer, []):
            fixed = [p for p in addresses.get(item.id, ()) if p in pains]
            if fixed:
                under.setdefault(f"{pain}:{fixed[0]}", []).append(item)
            else:
                kept.append(item)
        grouped[fixer] = kept
    return under


def _open(items: list[BaseEntity], kind: EntityKind, task_terms: set[str]) -> list[BaseEntity]:
    """Those still open (a pain point), and resolved ones only when the task is about them."""
    return [i for i in items if not kind.is_resolved(i) or _about(i, task_terms)]


def _series(grouped: Mapping[str, list[BaseEntity]]) -> list[MeasuredSeries]:
    """The dated series of every entity given that keeps one (what a decision's outcome is
    read from), before any is taken out of the block."""
    return [
        kind.series(kind.metadata_of(entity))
        for kind in in_sections()
        if kind.series is not None
        for entity in grouped.get(kind.type, [])
    ]


def _one_currency(entities: Sequence[BaseEntity]) -> str | None:
    """The currency the entities' amounts are in, if they agree on one: a metric's unit, and
    the signs their sentences write amounts with ("$36"). It is the currency of an amount
    stored bare (a campaign's budget). None when nothing says, or two differ."""
    found: set[str] = set()
    for entity in entities:
        code = kind_of(entity.type).currency_of(entity) if is_kind(entity.type) else None
        if code:
            found.add(code)
        found.update(code for sign, code in CURRENCY_CODES.items() if sign in entity.content)
    return found.pop() if len(found) == 1 else None


def assemble_entity_context(
    entities: Sequence[BaseEntity],
    max_tokens: int = 4000,
    task: str = "",
    links: Mapping[str, Sequence[str]] | None = None,
    addresses: Mapping[str, Sequence[str]] | None = None,
) -> str:
    """Group by kind in section order (domain/kinds/); entities keep the order given (rank
    order) within a kind, and an entity of no registered kind is left out. Each line is
    rendered from the typed entity by its kind (`EntityKind.facts` and the rest).

    `links` ("type:id" -> campaign ids) lists a linked metric, decision or pain point under its
    campaign's line instead of in its own section; `addresses` (decision id -> pain point ids)
    lists a decision under the pain point it was meant to fix."""
    task_terms = set(tokenize(task))
    grouped: dict[str, list[BaseEntity]] = {}
    for entity in entities:
        grouped.setdefault(entity.type, []).append(entity)
    kinds = in_sections()
    series = _series(grouped)
    for kind in kinds:
        if kind.resolved is not None and kind.type in grouped:
            grouped[kind.type] = _open(grouped[kind.type], kind, task_terms)
    under = _groups(grouped, links or {}, addresses or {})
    currency = _one_currency(entities)

    sections = ["<entity_memory>"]
    budget = _Budget(max_tokens)
    for kind in kinds:
        items = grouped.get(kind.type, [])
        if not items:
            continue
        lines: list[str] = []
        shown = items[:ITEMS_PER_TYPE]
        if kind.line_campaign is not None:
            shown = _campaign_grouped(shown, kind)
        for item in shown:
            if not budget.take(_entry(item, kind, series, currency)):
                break
            lines.append(budget.last)
            for member in under.get(f"{kind.type}:{item.id}", []):
                of = kind_of(member.type)
                line = f"  - {of.member_label} " + _entry(member, of, series, currency)[2:]
                if not budget.take(line):
                    break
                lines.append(line)
        if lines:
            sections.append(f"\n### {kind.label}\n" + "".join(lines))
    sections.append("</entity_memory>")
    return "\n".join(sections)


class _Budget:
    """The block's token budget: a line is taken only while it fits."""

    def __init__(self, max_tokens: int) -> None:
        self.left = max_tokens
        self.last = ""

    def take(self, line: str) -> bool:
        cost = estimate_tokens(line)
        if cost > self.left:
            return False
        self.left -= cost
        self.last = line
        return True
