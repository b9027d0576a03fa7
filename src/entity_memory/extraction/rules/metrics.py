"""KPI observations: a KPI, the value it was measured at, its target if one is stated, and the
campaign it belongs to.

A value is what the KPI *is* ("CPA is $36", "a 3.1 ROAS"); a number after "target", "goal",
"want it under" or before "target" is the target and never the value. A number that is only
compared against ("under $30" with no goal word) is neither, so it is not stored.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from entity_memory.domain.amounts import CURRENCY_CODES
from entity_memory.domain.kinds import METRIC
from entity_memory.domain.vocab import CHANNEL_TERMS
from entity_memory.extraction.base import Message
from entity_memory.extraction.rules.campaigns import account_wide, clause_at, in_force, owner
from entity_memory.extraction.rules.detector import (
    Conversation,
    Detector,
    Naming,
    SentenceScope,
    as_found,
)
from entity_memory.extraction.rules.lexicon import (
    ACCOUNT_KPI_WORDS,
    CAMPAIGN_LEAD_IN,
    COMPARATOR_BEFORE,
    FROM_BEFORE,
    FUNCTION_WORDS,
    KPI_LINK,
    KPI_OF_PART,
    KPI_RES,
    LEADING_WORDS,
    NOT_A_KPI_VALUE,
    NOT_A_STATEMENT,
    NOT_A_TARGET_AFTER,
    NOT_IN_FORCE,
    PLURAL_RATES,
    PROPOSAL_CUE,
    STRATEGY_LINK,
    STRATEGY_PREFIX,
    STRATEGY_RES,
    TARGET_AFTER,
    TARGET_BEFORE,
    TARGET_LINK,
    TARGET_PREP,
    TIME_UNITS,
    TO_BETWEEN,
    UNIT_COST,
    VALUE,
    VALUE_AT_END,
    WORD_BEFORE,
)
from entity_memory.extraction.rules.mentions import Mention, MentionFinder, first_part
from entity_memory.extraction.rules.sentences import Sentence, add_sources, ends_before
from entity_memory.extraction.rules.tables import table_readings

#: The words of a structured name that only separate its parts.
SEPARATORS = frozenset({"-", "\u2013", "|", ":"})
_UNITS = {**CURRENCY_CODES, "%": "%", "percent": "%", "x": "x"}


@dataclass
class Reading:
    kpi: str
    campaign: str | None
    value: float | None = None
    value_text: str | None = None
    unit: str | None = None
    target: float | None = None
    target_text: str | None = None
    sources: list[Sentence] = field(default_factory=list)
    #: The sentence that stated each field ("value", "target") as it now stands: what the
    #: stored fact is quoted from, so its quote never shows a figure it no longer holds.
    stated: dict[str, Sentence] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.campaign} {self.kpi}" if self.campaign else self.kpi


def _number(m: re.Match[str]) -> float:
    value = float(m.group("num").replace(",", ""))
    return value * 1000 if m.group("k") else value


def _unit(m: re.Match[str]) -> str | None:
    for key in (m.group("cur"), (m.group("unit") or "").lower()):
        if key in _UNITS:
            return _UNITS[key]
    return None


def _is_target(text: str, m: re.Match[str]) -> bool:
    if TARGET_AFTER.match(text[m.end() :]):
        return True
    before = text[max(0, m.start() - 30) : m.start()]
    return bool(TARGET_BEFORE.search(before) and ends_before(TARGET_PREP, text, m.start()))


def _without_mentions(text: str, start: int, end: int, mentions: list[Mention]) -> str:
    """The words between a KPI and its value, with a campaign named there (and the "on"/"for"
    before it) left out: "conversion rate on Campaign X is 6%" links like "... rate is 6%"."""
    gap = text[start:end]
    for m in mentions:
        if start <= m.start and m.end <= end:
            gap = gap.replace(text[m.start : m.end], " ")
    return CAMPAIGN_LEAD_IN.sub(" ", gap)


def _explicit(m: re.Match[str]) -> bool:
    """A number before a KPI is its value only when it looks like one ("$42", "3.1", "4%"),
    not when it is part of a name ("Campaign 2 CPA")."""
    return bool(m.group("num") and (m.group("cur") or m.group("unit") or "." in m.group("num")))


def _kpis(text: str) -> list[tuple[int, int, str]]:
    """(start, end, name) of each KPI the sentence names. A KPI written out as a phrase keeps
    the user's words ("cost per lead"); an acronym is its canonical form ("CPL")."""
    found = []
    strategy_spans = [m.span() for p, _ in STRATEGY_RES for m in p.finditer(text)]
    for pattern, name in KPI_RES:
        for m in pattern.finditer(text):
            inside = any(a <= m.start() < b for a, b in strategy_spans)
            if not inside and not ends_before(STRATEGY_PREFIX, text, m.start()):
                # One name for one KPI however it was said: "conversion rates" is the rate.
                written = PLURAL_RATES.sub("rate", m.group(0).lower())
                found.append((m.start(), m.end(), written if " " in written else name))
    for m in UNIT_COST.finditer(text):
        if m.group("unit").lower() not in TIME_UNITS:
            found.append((m.start("per"), m.end(), f"cost per {m.group('unit').lower()}"))
    found.sort(key=lambda f: (f[0], -f[1]))
    kept: list[tuple[int, int, str]] = []
    for f in found:
        if not kept or f[0] >= kept[-1][1]:
            kept.append(f)
    return kept


def _strategy_targets(
    text: str, mentions: list[Mention], context: str | None, sentence: Sentence
) -> list[Reading]:
    """A campaign's CPA target stated as its Target CPA's figure in force, in money: the amount
    right after the strategy ("Target CPA at $52", "tCPA is now $44") or right before it ("the
    $52 Target CPA"). Only for a campaign the sentence or turn names, or the one campaign the
    conversation has named ("tCPA is now $44" after talk of one campaign): a target is a
    campaign's setting. Never from a proposal, a doubt, a denial or a condition. A Target ROAS is
    left out: "400%" and "4x" are one goal in two units the stored metric may not share."""
    out = []
    for pattern, strategy in STRATEGY_RES:
        if strategy != "Target CPA":
            continue
        for m in pattern.finditer(text):
            if NOT_IN_FORCE.search(_clause_of(text, m.start())):
                continue
            campaign = owner(m.start(), text, mentions) if mentions else context
            link = STRATEGY_LINK.match(text, m.end())
            after = VALUE.match(text, link.end() if link else m.end())
            before = ends_before(VALUE_AT_END, text, m.start())
            if NOT_A_TARGET_AFTER.match(text[m.end() :]):
                before = None  # "$500 Target CPA spend": what the strategy spent
            amount = next((v for v in (after, before) if _money_target(text, v)), None)
            if campaign and amount:
                reading = Reading(kpi="CPA", campaign=campaign, sources=[sentence])
                reading.target, reading.target_text = _number(amount), amount.group(0).strip()
                reading.stated["target"] = sentence
                out.append(reading)
    return out


def _clause_of(text: str, at: int) -> str:
    """The clause of `text` around position `at` ("tCPA is now $44, no change to the
    budget": the "no" is the budget's)."""
    start, end = clause_at(text, at)
    return text[start:end]


def _money_target(text: str, amount: re.Match[str] | None) -> bool:
    """An amount of money that nothing after it makes a budget or a change."""
    if amount is None or not amount.group("num") or not amount.group("cur"):
        return False
    return not NOT_A_TARGET_AFTER.match(text[amount.end() :])


def _part_of_account(text: str, start: int) -> bool:
    """A KPI a word qualifies that is neither a campaign found nor the account ("trail CPA",
    "mobile CTR"): the reading is of some part left unnamed, so it is nobody's."""
    m = WORD_BEFORE.search(text, max(0, start - 30), start)
    word = m.group(1).lower() if m else ""
    return bool(word) and word not in FUNCTION_WORDS | LEADING_WORDS | ACCOUNT_KPI_WORDS


def _with_parts(
    text: str, kpis: list[tuple[int, int, str]], finder: MentionFinder
) -> list[Mention]:
    """The sentence's campaign mentions, and a campaign named by its short first part right
    after a KPI ("cost per sale on ZX" of "ZX - Pet Cover - US"), where nothing else is."""
    mentions = finder.find(text)
    for _, end, _ in kpis:
        m = KPI_OF_PART.match(text, end)
        taken = any(x.start <= (m.start("part") if m else -1) < x.end for x in mentions)
        if m and not taken and (name := finder.named_by_part(m.group("part"))):
            mentions = [*mentions, Mention(name, m.start("part"), m.end("part"))]
    return sorted(mentions, key=lambda x: x.start)


def _kept(reading: Reading, text: str, start: int, role: str) -> bool:
    """A measured value at `start` is stored when it is in force ("CPA could drop to $30 if
    ..." is supposed, not measured) and someone's: a campaign's, or the account's, which is
    taken only from the user's own words (an assistant's figure must say which campaign it
    is about) and never from a KPI a word ties to some part left unnamed."""
    if not in_force(text, start):
        return False
    if reading.campaign is not None:
        return True
    return role == "user" and not _part_of_account(text, start)


def _values_after(text: str, end: int, stop: int) -> list[re.Match[str]]:
    return [
        m
        for m in VALUE.finditer(text, end, stop)
        if m.group("num") and not NOT_A_KPI_VALUE.match(text[m.end() :])
    ]


def detect(
    sentence: Sentence, finder: MentionFinder, context: str | None, sole: str | None = None
) -> list[Reading]:
    """The KPI readings one sentence states; `context` is the campaign the turn was about,
    `sole` the one campaign the conversation has named so far (if only one)."""
    text = sentence.text
    if NOT_A_STATEMENT.search(text):
        return []
    if sentence.role == "assistant" and PROPOSAL_CUE.search(text):
        return []
    kpis = _kpis(text)
    mentions = _with_parts(text, kpis, finder)
    out: list[Reading] = []
    for i, (start, end, kpi) in enumerate(kpis):
        stop = kpis[i + 1][0] if i + 1 < len(kpis) else len(text)
        campaign = owner(start, text, mentions) if mentions else context
        if campaign == context and account_wide(text, start):
            campaign = None  # "its CPA ... across the account": the account's, not the turn's
        reading = Reading(kpi, campaign, sources=[sentence])
        before = ends_before(VALUE_AT_END, text, start)
        candidates = _values_after(text, end, stop)
        first = candidates[0] if candidates else None
        gap = _without_mentions(text, end, first.start(), mentions) if first else ""
        if (
            len(candidates) > 1
            and FROM_BEFORE.search(text[end : first.start()])  # type: ignore[union-attr]
            and TO_BETWEEN.fullmatch(text[first.end() : candidates[1].start()])  # type: ignore[union-attr]
        ):
            first = candidates[1]  # "went from $5.20 to $6.80": the value is where it went
            candidates = candidates[1:]
        if first and TARGET_LINK.match(gap):
            reading.target, reading.target_text = _number(first), first.group(0).strip()
            candidates = candidates[1:]
        elif first and KPI_LINK.match(gap) and not _is_target(text, first):
            if not ends_before(COMPARATOR_BEFORE, text, first.start()):
                reading.value, reading.value_text, reading.unit = (
                    _number(first),
                    first.group(0).strip(),
                    _unit(first),
                )
            candidates = candidates[1:]
        elif before and _explicit(before) and TARGET_AFTER.match(text[end:]):
            # "a 90% impression share target": the figure before the KPI is its goal
            reading.target, reading.target_text = _number(before), before.group(0).strip()
        elif before and _explicit(before) and not _is_target(text, before):
            reading.value, reading.value_text = _number(before), before.group(0).strip()
            reading.unit = _unit(before)
        for m in candidates:
            if reading.target is None and _is_target(text, m):
                reading.target, reading.target_text = _number(m), m.group(0).strip()
        reading.stated = {
            f: sentence for f in ("value", "target") if getattr(reading, f) is not None
        }
        if reading.value is not None and _kept(reading, text, start, sentence.role):
            out.append(reading)
    return out + _strategy_targets(text, mentions, context or sole, sentence)


def merge(into: Reading, new: Reading) -> None:
    for attr in ("value", "value_text", "unit", "target", "target_text"):
        if getattr(new, attr) is not None:
            setattr(into, attr, getattr(new, attr))
    into.sources = add_sources(into.sources, new.sources)
    into.stated.update(new.stated)


def stating(r: Reading) -> str | None:
    """The quote of what the reading now holds: the sentence of its value and that of its
    target, joined by an ellipsis when they differ (grounding checks each piece); None when
    it does not know them (the caller then finds a sentence by its numbers)."""
    said = [r.stated[f] for f in ("value", "target") if getattr(r, f) is not None and f in r.stated]
    if not said or len(said) < sum(getattr(r, f) is not None for f in ("value", "target")):
        return None
    return " … ".join(dict.fromkeys(s.excerpt for s in said))


def summary(r: Reading) -> str:
    if r.value_text is None:
        text = f"{r.kpi} target {r.target_text}"
    else:
        text = f"{r.kpi} {r.value_text}" + (f" (target {r.target_text})" if r.target_text else "")
    return f"{text}, {r.campaign}." if r.campaign else f"{text}."


def short_campaign(name: str) -> str:
    """How people shorten a campaign's name when they name its KPI ("Brand CTR"): a
    structured name's first part ("Lotus Mats - All Sizes" -> "Lotus Mats"), else the name
    without the channel words that end it ("Brand Search" -> "Brand")."""
    first = first_part(name)
    if first is not None:
        return first
    ws = name.split()
    while len(ws) > 1 and (ws[-1].lower() in CHANNEL_TERMS or ws[-1] in SEPARATORS):
        ws.pop()  # "Pet Cover - Brand" -> "Pet Cover", not "Pet Cover -"
    return " ".join(ws)


def short_names(r: Reading, campaign_names: Iterable[str]) -> list[str]:
    """The name people give the reading: its KPI after the campaign's short name, unless
    another of the user's campaigns has that short name too ("Sale Search", "Sale PMax"):
    an alias two metrics share would merge them."""
    if not r.campaign:
        return []
    short = short_campaign(r.campaign)
    sharing = {n.lower() for n in campaign_names if short_campaign(n).lower() == short.lower()}
    if short == r.campaign or sharing - {r.campaign.lower()}:
        return []
    return [f"{short} {r.kpi}"]


def metadata(r: Reading) -> dict[str, object]:
    """The reading's fields; a value not stated is left out, so merging a target into the
    stored metric keeps its value."""
    meta: dict[str, object] = {"kpi": r.kpi}
    if r.value is not None:
        meta["value"] = r.value
    if r.unit:
        meta["unit"] = r.unit
    if r.campaign:
        meta["campaign"] = r.campaign
    if r.target is not None:
        meta["target"] = r.target
    return meta


def from_tables(messages: list[Message], finder: MentionFinder) -> list[Reading]:
    """The readings of the conversation's tables (tables.py). A row is a campaign where the
    header says so or the user's campaigns have its name. A KPI row names no campaign: it is
    the one campaign its message's prose mentions, else (as for sentences) an account-level
    figure only from the user's own table."""
    out: list[Reading] = []
    about: dict[int, str | None] = {}
    for r in table_readings(messages):
        if r.row is not None:
            campaign = finder.canonical(r.row)
            if not r.campaign_rows and campaign == r.row:
                continue  # a keyword, product or service row, not a campaign we know
        elif r.of is not None:
            campaign = finder.named_by_part(r.of)
            if campaign is None:
                continue  # "CPA (mobile)": of some part the rules cannot name
        else:
            if r.turn not in about:
                about[r.turn] = _prose_campaign(messages[r.turn].content, finder)
            campaign = about[r.turn]
            if campaign is None and r.role != "user":
                continue
        source = Sentence(r.excerpt, r.role, r.turn, 0)
        reading = Reading(r.kpi, campaign, r.cell.value, r.cell.text, r.cell.unit, sources=[source])
        reading.stated["value"] = source
        out.append(reading)
    return out


def _prose_campaign(content: str, finder: MentionFinder) -> str | None:
    """The one campaign a message's prose (its lines outside tables) mentions, if one."""
    prose = [ln for ln in content.splitlines() if "|" not in ln]
    named = {m.name for ln in prose for m in finder.find(ln) if not m.platform}
    return named.pop() if len(named) == 1 else None


class MetricDetector(Detector[Reading]):
    """KPI readings: a sentence's, with the campaign its turn was about standing in for "its",
    then the conversation's tables."""

    kind = METRIC

    def in_sentence(self, scope: SentenceScope) -> list[Reading]:
        return detect(scope.sentence, scope.finder, scope.turn_campaign, scope.sole_campaign)

    def in_conversation(self, conversation: Conversation) -> list[Reading]:
        return from_tables(conversation.messages, conversation.finder)

    settle = staticmethod(as_found)
    merge = staticmethod(merge)
    summary = staticmethod(summary)
    metadata = staticmethod(metadata)
    source = staticmethod(stating)

    def other_names(self, fact: Reading, naming: Naming) -> list[str]:
        """A campaign's metric is named as people say it, by the campaign's short name
        ("Brand CTR"); the full name stays an alias."""
        return short_names(fact, naming.campaign_names)

    def candidate_content(self, fact: Reading, stored: bool) -> str | None:
        """A target alone ("tCPA is now $44") updates a metric the user has; it makes none:
        which of a lead business's KPIs a Target CPA aims at is not said."""
        return None if fact.value is None and not stored else summary(fact)


DETECTOR = MetricDetector()
