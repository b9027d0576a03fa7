"""Campaign facts: a budget, bid strategy or status stated about one named campaign.

A fact is attached to the campaign named in its clause, or to the only campaign its sentence
names; with two candidates and nothing to choose between them, nothing is stored.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass, field
from functools import lru_cache

from entity_memory.domain.kinds import CAMPAIGN
from entity_memory.domain.vocab import STATUSES
from entity_memory.extraction.rules.detector import (
    Conversation,
    Detector,
    SentenceScope,
    as_found,
)
from entity_memory.extraction.rules.lexicon import (
    ACCOUNT_WIDE,
    ADJACENT_TO_NAME,
    BID_WORDS,
    BUDGET_AFTER,
    BUDGET_BEFORE,
    CLAUSE_SPLIT,
    CONTRAST,
    FUNCTION_WORDS,
    HYPOTHETICAL,
    KPI_RES,
    LEADING_WORDS,
    MONEY,
    NOT_A_STATEMENT,
    OPENING_LABEL,
    PER_DAY,
    PROPOSAL_CUE,
    REPORTED_STATUS,
    REPORTED_STATUSES,
    RESULTING_AMOUNT,
    SPEND_BEFORE,
    STATUS_RE,
    STRATEGY_RES,
    STRATEGY_TARGET_CUE,
    TRANSFER_AFTER,
    TRANSFER_BEFORE,
    TURNED_DOWN,
)
from entity_memory.extraction.rules.mentions import Mention, MentionFinder
from entity_memory.extraction.rules.names import words
from entity_memory.extraction.rules.sentences import LOOKBACK, Sentence, add_sources, ends_before


@dataclass
class CampaignFacts:
    name: str
    budget: float | None = None
    budget_text: str | None = None
    strategy: str | None = None
    status: str | None = None
    sources: list[Sentence] = field(default_factory=list)
    #: The sentences whose subject it is (named first, the only campaign they name): what
    #: may describe it. A passing mention may be about something else.
    about: list[Sentence] = field(default_factory=list)


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
    sentence names, unless the fact's clause speaks of the whole account ("overall") or turns
    away from that campaign ("X is fine, but CPA is $48"); None when ambiguous or absent."""
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
        if account_wide(text, pos):
            return None
    names = {m.name for m in mentions}
    if len(names) != 1:
        return None
    (mention, *_) = mentions
    lo, hi = sorted((mention.end, pos))
    return None if CONTRAST.search(text, lo, hi) else names.pop()


def account_wide(text: str, pos: int) -> bool:
    """The clause at `pos` speaks of the whole account ("overall", "across the account")."""
    return _clause_says(ACCOUNT_WIDE, text, *clause_at(text, pos))


def in_force(text: str, pos: int) -> bool:
    """A setting at `pos` is stated as in force: its clause does not suppose, weigh or refuse
    it ("would", "if", "we considered", "don't"), and the sentence does not turn it down
    ("..., and decided against it")."""
    hypothetical = _clause_says(HYPOTHETICAL, text, *clause_at(text, pos))
    return not (hypothetical or _clause_says(TURNED_DOWN, text, 0, len(text)))


@lru_cache(maxsize=64)
def _clause_says(pattern: re.Pattern[str], text: str, start: int, end: int) -> bool:
    """`pattern` in the clause `text[start:end]`: read once a clause, not once a fact (a
    long clause of many facts would be read once per fact)."""
    return bool(pattern.search(text, start, end))


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
    platforms = {m.name for m in mentions if m.platform}

    def get(name: str) -> CampaignFacts:
        return facts.setdefault(name, CampaignFacts(name, sources=[sentence]))

    def campaign_at(pos: int) -> str | None:
        """The campaign a setting at `pos` is stated of: never an ad platform, never in a
        clause that supposes, weighs or refuses it."""
        name = owner(pos, text, mentions)
        if name in platforms or not in_force(text, pos):
            return None
        return name

    for pos, amount, shown in budgets(text):
        if name := campaign_at(pos):
            get(name).budget, get(name).budget_text = amount, shown
    for pos, strategy in strategies(text):
        if name := campaign_at(pos):
            get(name).strategy = strategy
    for m in STATUS_RE.finditer(text):
        if name := campaign_at(m.start("status")):
            get(name).status = STATUSES[m.group("status").lower()]
    if (done := REPORTED_STATUS.match(text)) and (name := _named_at(text, done.end(), mentions)):
        get(name).status = REPORTED_STATUSES[done.group("verb").lower()]
    campaigns = {m.name for m in mentions if not m.platform}
    for mention in mentions:  # a campaign named with nothing stated is still mentioned
        if not mention.platform:
            get(mention.name)
    if len(campaigns) == 1 and mentions and _leads(text[: mentions[0].start]):
        get(campaigns.pop()).about = [sentence]
    return list(facts.values())


def merge(into: CampaignFacts, new: CampaignFacts) -> None:
    """Later statements win: the session's last word on a campaign is its current state."""
    for attr in ("budget", "budget_text", "strategy", "status"):
        if getattr(new, attr) is not None:
            setattr(into, attr, getattr(new, attr))
    into.sources = add_sources(into.sources, new.sources)
    into.about = new.about or into.about


def summary(facts: CampaignFacts) -> str:
    """Its fields, or where nothing was stated, the latest sentence about it; failing that,
    the one that introduced it ("" for a campaign the user has: its description stands)."""
    parts = []
    if facts.strategy:
        parts.append(f"strategy {facts.strategy}")
    if facts.budget_text:
        parts.append(f"budget {facts.budget_text}")
    if facts.status:
        parts.append(f"status {facts.status}")
    if not parts:
        excerpt = (facts.about or facts.sources)[-1 if facts.about else 0].excerpt
        return (
            excerpt
            if excerpt.lower().startswith(facts.name.lower())
            else f"{facts.name}: {excerpt}"
        )
    return f"{facts.name}: " + ", ".join(parts) + "."


def _named_at(text: str, pos: int, mentions: list[Mention]) -> str | None:
    """The campaign named right at `pos` ("the X campaign"), if one (never an ad platform)."""
    after = (m for m in mentions if m.start >= pos and not m.platform)
    first = next(after, None)
    return first.name if first and _leads(text[pos : first.start]) else None


def _leads(before: str) -> bool:
    """A name after these words is what the sentence is about: determiners and the like
    ("Also, the X campaign ..."), after a report's label and its verb ("Done: paused X")."""
    ws = words(OPENING_LABEL.sub("", before))
    if ws and (REPORTED_STATUS.match(before) or ws[0].lower().endswith("ed")):
        ws = ws[1:]
    return all(w.lower() in LEADING_WORDS or w.lower() in FUNCTION_WORDS for w in ws)


def described(facts: CampaignFacts) -> bool:
    """The session states something of it: a field, or a sentence whose subject it is."""
    return bool(facts.about or metadata(facts))


def metadata(facts: CampaignFacts) -> dict[str, object]:
    meta: dict[str, object] = {}
    if facts.strategy:
        meta["strategy"] = facts.strategy
    if facts.budget is not None:
        meta["budget"] = facts.budget
    if facts.status:
        meta["status"] = facts.status
    return meta


class CampaignDetector(Detector[CampaignFacts]):
    """Campaigns and the settings stated of them."""

    kind = CAMPAIGN

    def in_sentence(self, scope: SentenceScope) -> list[CampaignFacts]:
        return detect(scope.sentence, scope.finder)

    def in_conversation(self, conversation: Conversation) -> list[CampaignFacts]:
        return []

    settle = staticmethod(as_found)
    merge = staticmethod(merge)
    summary = staticmethod(summary)
    metadata = staticmethod(metadata)

    def candidate_content(self, fact: CampaignFacts, stored: bool) -> str | None:
        """A campaign the user has, only mentioned in passing: its stored description stands
        (a sent content replaces it; the sentence is about something else)."""
        return "" if stored and not described(fact) else summary(fact)


DETECTOR = CampaignDetector()
