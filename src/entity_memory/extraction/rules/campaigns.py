"""Campaign facts: a budget, bid strategy or status stated about one named campaign.

A fact is attached to the campaign named in its clause, or to the only campaign its sentence
names; with two candidates and nothing to choose between them, nothing is stored.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass, field
from functools import lru_cache

from entity_memory.domain.vocab import STATUSES
from entity_memory.extraction.rules.detector import Conversation, SentenceScope
from entity_memory.extraction.rules.lexicon import (
    ADJACENT_TO_NAME,
    BID_WORDS,
    BUDGET_AFTER,
    BUDGET_BEFORE,
    CLAUSE_SPLIT,
    KPI_RES,
    MONEY,
    NOT_A_STATEMENT,
    PER_DAY,
    PROPOSAL_CUE,
    RESULTING_AMOUNT,
    SPEND_BEFORE,
    STATUS_RE,
    STRATEGY_RES,
    STRATEGY_TARGET_CUE,
    TRANSFER_AFTER,
    TRANSFER_BEFORE,
)
from entity_memory.extraction.rules.mentions import Mention, MentionFinder
from entity_memory.extraction.rules.sentences import LOOKBACK, Sentence, add_sources, ends_before


@dataclass
class CampaignFacts:
    name: str
    budget: float | None = None
    budget_text: str | None = None
    strategy: str | None = None
    status: str | None = None
    sources: list[Sentence] = field(default_factory=list)


@lru_cache(maxsize=8)
def clauses(text: str) -> tuple[tuple[int, int], ...]:
    """Clause spans of a sentence (every fact of a sentence asks: computed once)."""
    spans, start = [], 0
    for m in CLAUSE_SPLIT.finditer(text):
        spans.append((start, m.start()))
        start = m.end()
    spans.append((start, len(text)))
    return tuple(spans)


def clause_at(text: str, pos: int) -> tuple[int, int]:
    """The span of the clause holding `pos`: the first whose end reaches it (by bisection:
    every fact of a sentence asks)."""
    spans = clauses(text)
    return spans[min(bisect_left(spans, pos, key=lambda span: span[1]), len(spans) - 1)]


def owner(pos: int, text: str, mentions: list[Mention]) -> str | None:
    """The campaign a fact at `pos` is about: the one its clause names, else the only one the
    sentence names; None when that is ambiguous or absent."""
    mentions = [m for m in mentions if not m.platform or m.start < pos]
    start, end = clause_at(text, pos)
    if start <= pos <= end:
        inside = {m.name for m in mentions if start <= m.start < end}
        if len(inside) == 1:
            return inside.pop()
        if len(inside) > 1:
            # Two campaigns in one clause: only a fact right after one of them is its own.
            before = [m for m in mentions if start <= m.start < pos]
            if before and ADJACENT_TO_NAME.match(text[before[-1].end : pos]):
                return before[-1].name
            return None
    names = {m.name for m in mentions}
    return names.pop() if len(names) == 1 else None


def money_value(m: re.Match[str]) -> float:
    value = float((m.group("a") or m.group("b")).replace(",", ""))
    return value * 1000 if m.group("k") else value


def _kpi_near(text: str, start: int, strategy: list[tuple[int, int]]) -> bool:
    """A KPI just before the amount ("CPA $41"), not one inside a bid strategy's name
    ("Manual CPC, $25/day budget"; `strategy` holds their spans)."""
    lo = max(0, start - 25)
    return any(
        not any(a <= m.start() < b for a, b in strategy)
        for p, _ in KPI_RES
        for m in p.finditer(text, lo, start)
    )


def budgets(text: str) -> list[tuple[int, float, str]]:
    """(position, amount, display) of each amount the sentence states as a budget."""
    out = []
    strategy = [m.span() for p, _ in STRATEGY_RES for m in p.finditer(text)]
    for m in MONEY.finditer(text):
        before, after = text[max(0, m.start() - LOOKBACK) : m.start()], text[m.end() :]
        if ends_before(TRANSFER_BEFORE, text, m.start()) or TRANSFER_AFTER.match(after):
            continue
        if SPEND_BEFORE.search(before[-30:]) or _kpi_near(text, m.start(), strategy):
            continue
        per_day = bool(PER_DAY.match(after))
        stated = BUDGET_AFTER.match(after) or BUDGET_BEFORE.search(before[-45:])
        resulting = RESULTING_AMOUNT.search(before[-45:])
        if per_day or stated or resulting:
            shown = m.group(0).strip() + ("/day" if per_day else "")
            out.append((m.start(), money_value(m), shown))
    return out


def strategies(text: str) -> list[tuple[int, str]]:
    found = [(m.start(), name) for p, name in STRATEGY_RES for m in p.finditer(text)]
    found.sort()
    kept: list[tuple[int, str]] = []
    for start, end in clauses(text):
        inside = [f for f in found if start <= f[0] < end]
        cued = [f for f in inside if ends_before(STRATEGY_TARGET_CUE, text, f[0])]
        if len(inside) == 1 and (cued or BID_WORDS.search(text[start:end]) or end - start < 40):
            kept += inside
        elif len(cued) == 1:
            kept += cued
    # "move X to A, B wastes too much": when one strategy is the destination, it alone counts.
    cued_all = [k for k in kept if ends_before(STRATEGY_TARGET_CUE, text, k[0])]
    return cued_all or kept


def detect(sentence: Sentence, finder: MentionFinder) -> list[CampaignFacts]:
    """The campaign facts one sentence states."""
    text = sentence.text
    if NOT_A_STATEMENT.search(text):
        return []
    if sentence.role == "assistant" and PROPOSAL_CUE.search(text):
        return []
    mentions = finder.find(text)
    if not mentions:
        return []
    facts: dict[str, CampaignFacts] = {}

    def get(name: str) -> CampaignFacts:
        return facts.setdefault(name, CampaignFacts(name, sources=[sentence]))

    for pos, amount, shown in budgets(text):
        name = owner(pos, text, mentions)
        if name:
            get(name).budget, get(name).budget_text = amount, shown
    for pos, strategy in strategies(text):
        name = owner(pos, text, mentions)
        if name:
            get(name).strategy = strategy
    for m in STATUS_RE.finditer(text):
        name = owner(m.start("status"), text, mentions)
        if name:
            get(name).status = STATUSES[m.group("status").lower()]
    for mention in mentions:  # a campaign named with nothing stated is still mentioned
        if not mention.platform:
            get(mention.name)
    return list(facts.values())


def merge(into: CampaignFacts, new: CampaignFacts) -> None:
    """Later statements win: the session's last word on a campaign is its current state."""
    for attr in ("budget", "budget_text", "strategy", "status"):
        if getattr(new, attr) is not None:
            setattr(into, attr, getattr(new, attr))
    into.sources = add_sources(into.sources, new.sources)


def summary(facts: CampaignFacts) -> str:
    """Its fields, or where nothing was stated, the sentence that mentions it."""
    parts = []
    if facts.strategy:
        parts.append(f"strategy {facts.strategy}")
    if facts.budget_text:
        parts.append(f"budget {facts.budget_text}")
    if facts.status:
        parts.append(f"status {facts.status}")
    if not parts:
        excerpt = facts.sources[-1].excerpt
        return (
            excerpt
            if excerpt.lower().startswith(facts.name.lower())
            else f"{facts.name}: {excerpt}"
        )
    return f"{facts.name}: " + ", ".join(parts) + "."


def metadata(facts: CampaignFacts) -> dict[str, object]:
    meta: dict[str, object] = {}
    if facts.strategy:
        meta["strategy"] = facts.strategy
    if facts.budget is not None:
        meta["budget"] = facts.budget
    if facts.status:
        meta["status"] = facts.status
    return meta


class CampaignDetector:
    """Campaigns and the settings stated of them."""

    entity_type = "campaign"

    def in_sentence(self, scope: SentenceScope) -> list[CampaignFacts]:
        return detect(scope.sentence, scope.finder)

    def in_conversation(self, conversation: Conversation) -> list[CampaignFacts]:
        return []

    merge = staticmethod(merge)
    summary = staticmethod(summary)
    metadata = staticmethod(metadata)


DETECTOR = CampaignDetector()
