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
from typing import Any

from entity_memory.domain.amounts import amount
from entity_memory.domain.fence import neutralise
from entity_memory.domain.kind import (
    EntityKind,
    addressed_type,
    all_kinds,
    in_sections,
    kind_of,
    link_target_type,
)
from entity_memory.domain.kinds.metric import SERIES_SHOWN, unit_of
from entity_memory.domain.task_dates import measured_ms, stored_day
from entity_memory.domain.text import STOP_WORDS, estimate_tokens, normalize_name, tokenize
from entity_memory.domain.trends import trend_of

ITEMS_PER_TYPE = 5


__all__ = ["SERIES_SHOWN", "assemble_entity_context", "estimate_tokens"]


def _observations(metric: Mapping[str, Any]) -> list[tuple[int, float]]:
    """(when measured, value), oldest first: a value told after a decision about a day
    before it is no outcome of it."""
    meta = metric.get("metadata") or {}
    points = [
        (measured_ms(h.get("observedOn"), h["at"]), float(h["value"]))
        for h in meta.get("history") or []
        if isinstance(h.get("at"), int) and isinstance(h.get("value"), int | float)
    ]
    return sorted(points)


def _decided_on(decision: Mapping[str, Any], campaign: str) -> bool:
    """The decision names the campaign (in its affected entities, its name or its content)."""
    meta = decision.get("metadata") or {}
    wanted = normalize_name(campaign)
    if any(normalize_name(str(a)) == wanted for a in meta.get("affectedEntities") or []):
        return True
    terms = set(tokenize(campaign))
    text = set(tokenize(f"{decision.get('name', '')} {decision.get('content', '')}"))
    return bool(terms) and terms <= text


def _decided_at(decision: Mapping[str, Any]) -> int | None:
    """When the decision was said: its first stored time, or an earlier time its provenance
    gives (a client recording a decision taken last month says so in `provenance[].at`)."""
    times = [decision.get("createdAt")]
    times += [p.get("at") for p in decision.get("provenance") or [] if isinstance(p, Mapping)]
    known = [t for t in times if isinstance(t, int) and not isinstance(t, bool)]
    return min(known) if known else None


def decision_outcome(decision: Mapping[str, Any], metrics: Sequence[Mapping[str, Any]]) -> str:
    """`since 2026-05-03: CPA $52 -> $41 improving` for each metric of a campaign the decision
    is about that was observed both before and after it; "" where the memory cannot say."""
    made = _decided_at(decision)
    if made is None:
        return ""
    outcomes = []
    for metric in metrics:
        meta = metric.get("metadata") or {}
        campaign = meta.get("campaign")
        if not campaign or not _decided_on(decision, str(campaign)):
            continue
        points = _observations(metric)
        before = [v for at, v in points if at <= made]
        after = [v for at, v in points if at > made]
        if not before or not after:
            continue
        kpi = str(meta.get("kpi", ""))
        _, trend = trend_of(kpi, before[-1], after[-1])
        unit = unit_of(meta)
        change = f"{neutralise(kpi)} {amount(before[-1], unit)} -> {amount(after[-1], unit)}"
        outcomes.append(change if trend == "unknown" else f"{change} {trend}")
    if not outcomes:
        return ""
    return f"since {stored_day(made)}: " + ", ".join(outcomes)


def _entry(
    item: Mapping[str, Any], kind: EntityKind, metrics: Sequence[Mapping[str, Any]] = ()
) -> str:
    """The entity's line: its name, notes (campaign, resolved, as of), then its kind's facts
    (domain/kinds/) and its sentence where that says more than they do."""
    meta = item.get("metadata") or {}
    notes = []
    if kind.grouped_by_campaign and meta.get("campaign"):
        notes.append(neutralise(meta["campaign"]))
    if kind.can_resolve and meta.get("resolved"):
        notes.append("resolved")
    as_of = stored_day(item.get("updatedAt"))
    if as_of:
        notes.append(f"as of {as_of}")
    head = f"**{neutralise(item['name'])}**" + (f" ({', '.join(notes)})" if notes else "")
    content = neutralise(item.get("content", ""))
    facts = ""
    if isinstance(meta, Mapping):
        said = normalize_name(f"{item['name']} | {content}")
        facts = neutralise(kind.facts(meta, said))
        # Only what the sentence does not already say (a fact repeated verbatim is noise);
        # a series read after the sentence is always given.
        if not kind.facts_after_sentence and facts.lower() in content.lower():
            facts = ""
    if facts and not _says_more(content, f"{item['name']} {' '.join(notes)} {facts}"):
        content = ""  # the line is the fields: the sentence says nothing they do not
    if facts:
        first, last = (
            (content, f"[{facts}]") if kind.facts_after_sentence else (f"[{facts}]", content)
        )
        content = f"{first} {last}".strip()
    if kind.shows_outcome:
        outcome = decision_outcome(item, metrics)
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


def _about(item: Mapping[str, Any], task_terms: set[str]) -> bool:
    return bool(task_terms & set(tokenize(str(item.get("name", "")))))


def _campaign_grouped(items: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Metrics of one campaign together, campaigns in the order of their best-ranked metric."""
    order: dict[str, int] = {}
    for item in items:
        order.setdefault(str((item.get("metadata") or {}).get("campaign") or ""), len(order))
    return sorted(items, key=lambda i: order[str((i.get("metadata") or {}).get("campaign") or "")])


def _groups(
    grouped: dict[str, list[Mapping[str, Any]]],
    links: Mapping[str, Sequence[str]],
    addresses: Mapping[str, Sequence[str]],
) -> dict[str, list[Mapping[str, Any]]]:
    """The lines shown under another's, taken out of their own sections: under
    "campaign:<id>", its metrics, decisions and pain points (each under the first of its
    linked campaigns in the block); under "pain_point:<id>", the decisions taken against it
    that no campaign shows."""
    target, pain = link_target_type(), addressed_type()
    shown = {str(c.get("id")) for c in grouped.get(target, [])[:ITEMS_PER_TYPE]}
    under: dict[str, list[Mapping[str, Any]]] = {}
    for entity_type in (k.type for k in all_kinds() if k.member_label):
        kept = []
        for item in grouped.get(entity_type, []):
            linked = [c for c in links.get(f"{entity_type}:{item.get('id')}", ()) if c in shown]
            if linked:
                under.setdefault(f"{target}:{linked[0]}", []).append(item)
            else:
                kept.append(item)
        grouped[entity_type] = kept
    pains = {str(p.get("id")) for p in grouped.get(pain, [])[:ITEMS_PER_TYPE]}
    for fixer in (k.type for k in all_kinds() if k.addresses_pain_points):
        kept = []
        for item in grouped.get(fixer, []):
            fixed = [p for p in addresses.get(str(item.get("id")), ()) if p in pains]
            if fixed:
                under.setdefault(f"{pain}:{fixed[0]}", []).append(item)
            else:
                kept.append(item)
        grouped[fixer] = kept
    return under


def _open(items: list[Mapping[str, Any]], task_terms: set[str]) -> list[Mapping[str, Any]]:
    """Those still open (a pain point), and resolved ones only when the task is about them."""
    return [
        i for i in items if not (i.get("metadata") or {}).get("resolved") or _about(i, task_terms)
    ]


def assemble_entity_context(
    entities: Sequence[Mapping[str, Any]],
    max_tokens: int = 4000,
    task: str = "",
    links: Mapping[str, Sequence[str]] | None = None,
    addresses: Mapping[str, Sequence[str]] | None = None,
) -> str:
    """Group by kind in section order (domain/kinds/); entities keep the order given (rank
    order) within a kind, and an entity of no registered kind is left out.

    `links` ("type:id" -> campaign ids) lists a linked metric, decision or pain point under its
    campaign's line instead of in its own section; `addresses` (decision id -> pain point ids)
    lists a decision under the pain point it was meant to fix."""
    task_terms = set(tokenize(task))
    grouped: dict[str, list[Mapping[str, Any]]] = {}
    for entity in entities:
        grouped.setdefault(str(entity["type"]), []).append(entity)
    kinds = in_sections()
    metrics = [m for k in kinds if k.keeps_series for m in grouped.get(k.type, [])]
    for kind in kinds:
        if kind.can_resolve and kind.type in grouped:
            grouped[kind.type] = _open(grouped[kind.type], task_terms)
    under = _groups(grouped, links or {}, addresses or {})

    sections = ["<entity_memory>"]
    budget = _Budget(max_tokens)
    for kind in kinds:
        items = grouped.get(kind.type, [])
        if not items:
            continue
        lines: list[str] = []
        shown = items[:ITEMS_PER_TYPE]
        if kind.grouped_by_campaign:
            shown = _campaign_grouped(shown)
        for item in shown:
            if not budget.take(_entry(item, kind, metrics)):
                break
            lines.append(budget.last)
            for member in under.get(f"{kind.type}:{item.get('id')}", []):
                of = kind_of(str(member.get("type")))
                line = f"  - {of.member_label} " + _entry(member, of, metrics)[2:]
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
