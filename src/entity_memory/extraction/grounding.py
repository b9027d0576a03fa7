"""Grounding: every candidate must be traceable to words of the conversation, whoever made it.

A small model (and sometimes a large one) invents: an excerpt nobody wrote, a number that is
not in its excerpt, a campaign named after the advertiser's own business, a "$196 spent" read
as a CPA of 196. The memory prefers a missing fact to a wrong one, so each candidate, from the
rules or from a model, passes these checks after schema validation and before resolution; a
candidate that fails is rejected with the reason and never stored:

1. its `source` excerpt occurs in the conversation (case, whitespace, quote marks and dashes
   normalised; an excerpt elided with "..." must occur piece by piece);
2. every number stored as a metric's value or target, or a campaign's budget, occurs in that
   excerpt;
3. a metric's value is stated as that KPI's value: the KPI mention nearest to the number in the
   excerpt is of the metric's KPI (so "spent $196 ... CPA of $40" cannot give CPA 196);
4. a campaign's name occurs in the conversation or among the known entities' names;
5. a campaign is not the advertiser's own business: names the user introduces as their
   business, shop, company ... ("my studio, Clay Corner", "I run Clay Corner") are not campaigns.

Pure functions over plain text; nothing here reads storage or calls a model.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict

from entity_memory.domain.amounts import NumberMention, mentions_of
from entity_memory.domain.models import EntityInputBase
from entity_memory.domain.vocab import GENERIC_NAME_WORDS, KPI_NAMES
from entity_memory.extraction.base import KnownEntity, Message

#: Excerpt pieces (between "..." elisions) shorter than this are not checked on their own.
MIN_PIECE_CHARS = 3

_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})
_DASHES = re.compile("[\u2010-\u2015\u2212]")
_ELLIPSIS = re.compile(r"\.\.\.+|\u2026")
_WORDS = re.compile(r"[\W_]+")


def normalise_text(text: str) -> str:
    """Lowercase, curly quotes straight, dashes as '-', whitespace collapsed."""
    text = _DASHES.sub("-", text.translate(_QUOTES).lower())
    return " ".join(text.split())


def normalise_words(text: str) -> str:
    """Lowercase words only: punctuation to spaces, whitespace collapsed."""
    return " ".join(_WORDS.sub(" ", text.lower()).split())


def contains_words(haystack: str, needle: str) -> bool:
    """`needle` occurs in `haystack` as whole words (both normalised with `normalise_words`)."""
    return bool(needle) and f" {needle} " in f" {haystack} "


# --- KPI mentions ------------------------------------------------------------------------------

#: KPI families as advertisers write them: the family a candidate's `kpi` belongs to and the
#: words that state it. Cost-per-anything is one family (a cost per lead is a CPA whose
#: acquisition is a lead), and counts, spend and budget are KPIs of their own so that an amount
#: spent is never read as a cost per acquisition.
_COST_PER = r"cost per (?:acquisition|action|conversion|lead|sale|booking|signup|order|customer)"
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


def _distance(a: NumberMention, b: KpiMention) -> int:
    return max(0, b.start - a.end, a.start - b.end)


def value_tied_to_kpi(kpi: str, value: float, excerpt: str) -> bool:
    """The excerpt states `value` as this KPI's value: some occurrence of the number has a
    mention of the KPI's family as its nearest KPI mention. A KPI outside our vocabulary
    must at least be named in the excerpt."""
    family = kpi_family(kpi)
    occurrences = mentions_of(value, excerpt)
    if family is None:
        words = normalise_words(kpi)
        return bool(occurrences) and contains_words(normalise_words(excerpt), words)
    kpis = kpi_mentions(excerpt)
    for number in occurrences:
        if not kpis:
            return False
        nearest = min(kpis, key=lambda k: _distance(number, k))
        best = _distance(number, nearest)
        if any(k.family == family and _distance(number, k) == best for k in kpis):
            return True
    return False


# --- the advertiser's own business ------------------------------------------------------------

_BUSINESS_NOUN = (
    r"(?:business|company|shop|store|agency|studio|firm|practice|clinic|salon|startup"
    r"|restaurant|caf[eé]|bakery|boutique|website|school|gym)"
)
_PROPER_WORD = r"[A-Z0-9](?:[\w&'+-]|\.(?=\w))*"
_PROPER = rf"{_PROPER_WORD}(?:\s+(?:&\s+)?{_PROPER_WORD}){{0,4}}"
BUSINESS_NAME_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(
        rf"\b(?:[Mm]y|[Oo]ur)\s+(?:\w+\s+){{0,2}}{_BUSINESS_NOUN},?\s+(?:is\s+|'s\s+)?"
        rf"(?:called\s+|named\s+)?(?P<name>{_PROPER})"
    ),
    re.compile(
        rf"\b(?:I|[Ww]e)\s+(?:run|own|operate|have|started|founded|manage)\s+(?:a|an)\s+"
        rf"(?:[\w-]+\s+){{0,3}}{_BUSINESS_NOUN}\s+(?:called|named)\s+(?P<name>{_PROPER})"
    ),
    re.compile(rf"\b(?:I|[Ww]e)\s+(?:own|founded)\s+(?P<name>{_PROPER})"),
    re.compile(rf"\b[Hh]ere at\s+(?P<name>{_PROPER})"),
    # A self-introduction: "This is Ana from X", "Ana from X here", "Ana from X." at the start.
    re.compile(
        rf"(?:^|[.!?]\s+|\b[Tt]his is\s+|\bI'm\s+|\bI am\s+)[A-Z][a-z]+\s+(?:from|at)\s+"
        rf"(?P<name>{_PROPER})"
    ),
    re.compile(rf"\b[Aa]t\s+(?P<name>{_PROPER}),?\s+we\b"),
    re.compile(rf"\b(?P<name>{_PROPER})\s+is\s+(?:my|our)\s+(?:\w+\s+){{0,2}}{_BUSINESS_NOUN}\b"),
)
#: Leading words a pattern may catch that are not part of a name.
_NOT_NAME_START = frozenset({"i", "we", "a", "an", "the", "my", "our", "it", "this", "that"})


def business_names(user_texts: Iterable[str]) -> set[str]:
    """Names the user introduces as their own business (normalised words)."""
    names: set[str] = set()
    for text in user_texts:
        for pattern in BUSINESS_NAME_PATTERNS:
            for m in pattern.finditer(text):
                words = normalise_words(m.group("name")).split()
                while words and words[0] in _NOT_NAME_START:
                    words = words[1:]
                if words:
                    names.add(" ".join(words))
    return names


# --- the checks --------------------------------------------------------------------------------


class GroundingContext(BaseModel):
    """What candidates are checked against: one session's conversation and what is known."""

    model_config = ConfigDict(frozen=True)

    #: The conversation, `normalise_text`-ed and `normalise_words`-ed.
    text: str
    words: str
    #: Known entity names and aliases per type (normalised words).
    known: dict[str, frozenset[str]]
    business: frozenset[str]


class Rejection(BaseModel):
    """A candidate that failed a check: `code` is machine-readable, `reason` starts with
    "ungrounded:" and says what was not found."""

    item: dict[str, object]
    code: str
    reason: str


def grounding_context(
    texts: Sequence[tuple[str, str]], known: Iterable[tuple[str, str]] = ()
) -> GroundingContext:
    """`texts`: (role, content) of every message of the session; `known`: (type, name) of
    stored entities and their aliases."""
    joined = "\n".join(content for _, content in texts)
    by_type: dict[str, set[str]] = {}
    for entity_type, name in known:
        by_type.setdefault(entity_type, set()).add(normalise_words(name))
    return GroundingContext(
        text=normalise_text(joined),
        words=normalise_words(joined),
        known={t: frozenset(n) for t, n in by_type.items()},
        business=frozenset(business_names(c for r, c in texts if r == "user")),
    )


def source_in_conversation(source: str, ctx: GroundingContext) -> bool:
    pieces = [p.strip(" \"'") for p in _ELLIPSIS.split(normalise_text(source))]
    pieces = [p for p in pieces if len(p) >= MIN_PIECE_CHARS]
    if not pieces:
        return False
    return all(p in ctx.text or normalise_words(p) in ctx.words for p in pieces)


def _core_name(name: str) -> str:
    words = normalise_words(name).split()
    core = [w for w in words if w not in GENERIC_NAME_WORDS]
    return " ".join(core or words)


def _numbers(item: EntityInputBase) -> list[tuple[str, float]]:
    meta = getattr(item, "metadata", None)
    out: list[tuple[str, float]] = []
    for field in ("value", "target", "budget"):
        value = getattr(meta, field, None)
        if isinstance(value, int | float) and not isinstance(value, bool):
            out.append((field, float(value)))
    return out


def check(item: EntityInputBase, ctx: GroundingContext) -> tuple[str, str] | None:
    """None when the candidate is grounded, else (code, why not)."""
    source = item.source or ""
    if not source.strip():
        return "no_source", "no source excerpt"
    if not source_in_conversation(source, ctx):
        return "source_not_in_conversation", "source excerpt not in the conversation"
    for field, value in _numbers(item):
        if not mentions_of(value, source):
            return "number_not_in_source", f"{field} {value:g} not in the source excerpt"
    item_type: str = item.type  # type: ignore[attr-defined]
    meta = getattr(item, "metadata", None)
    value = getattr(meta, "value", None)
    if item_type == "metric" and isinstance(value, int | float):
        kpi = str(getattr(meta, "kpi", ""))
        if not value_tied_to_kpi(kpi, float(value), source):
            return "value_not_the_kpi", f"{value:g} is not stated as the {kpi} in the excerpt"
    if item_type == "campaign":
        core = _core_name(item.name)
        known = ctx.known.get("campaign", frozenset())
        if core in ctx.business or normalise_words(item.name) in ctx.business:
            return "own_business", "the user's own business is not a campaign"
        if not contains_words(ctx.words, core) and core not in {_core_name(k) for k in known}:
            return "campaign_not_in_conversation", "campaign name not in the conversation"
    return None


def ground(
    items: Sequence[EntityInputBase], ctx: GroundingContext
) -> tuple[list[EntityInputBase], list[Rejection]]:
    """The grounded candidates, and a rejection for each of the others."""
    kept: list[EntityInputBase] = []
    rejected: list[Rejection] = []
    for item in items:
        failed = check(item, ctx)
        if failed is None:
            kept.append(item)
        else:
            code, why = failed
            rejected.append(
                Rejection(item=item.to_json_dict(), code=code, reason=f"ungrounded: {why}")
            )
    return kept, rejected


def session_context(
    messages: Sequence[Message], known: Iterable[KnownEntity] = ()
) -> GroundingContext:
    """The grounding context of one session: its messages, and the known entities' names."""
    names = [(k.type, n) for k in known for n in (k.name, *k.aliases)]
    return grounding_context([(m.role, m.content) for m in messages], names)
