"""Where a sentence names a campaign: "Campaign X", "the X campaign", a quoted name, a name the
user's stored entities already have, an ad platform, or a proper name right before a KPI or
"budget" ("Spring Linen Sale ROAS"). Everything else is not a campaign name."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from entity_memory.domain.kinds import CAMPAIGN
from entity_memory.domain.text import normalize_name
from entity_memory.domain.vocab import CHANNEL_TERMS, PLATFORMS
from entity_memory.extraction.base import KnownEntity
from entity_memory.extraction.rules.lexicon import (
    ACTION_VERBS,
    CAMPAIGN_PREFIXED,
    CAMPAIGN_QUOTED,
    CAMPAIGN_SUFFIXED,
    DASHED_NAME,
    DATE_NUMBER,
    DATE_WORDS,
    FACT_AFTER_LABEL,
    FUNCTION_WORDS,
    LABELLED_LINE,
    LEADING_WORDS,
    NOT_NAME_ENDS,
    NOT_NAME_STARTS,
    PLATFORM_PRODUCT_WORDS,
    PLATFORM_RE,
    PROPER_BEFORE_KPI,
)
from entity_memory.extraction.rules.lexicon.shapes import (
    NAME_PARTS,
    WORD_SPAN,
)
from entity_memory.extraction.rules.names import acronym, well_formed


@dataclass(frozen=True)
class Mention:
    name: str
    start: int
    end: int
    #: An ad platform ("Meta") owns only facts that follow it ("Meta goes to $70").
    platform: bool = False


def _verb_like(word: str) -> bool:
    w = word.lower()
    return w in ACTION_VERBS or w.endswith(("ed", "ing")) or w.removesuffix("s") in ACTION_VERBS


def _a_date(ws: list[str]) -> bool:
    """Words that only say when ("Mar 3 - Mar 16", "Oct 2nd"): a period, not a name."""
    bare = [w.lower().strip(".,:;") for w in ws if w not in ("-", "\u2013", "|")]
    dated = [w for w in bare if w in DATE_WORDS or DATE_NUMBER.match(w)]
    return len(dated) == len(bare) and any(w in DATE_WORDS for w in bare)


def _shouted(ws: list[str]) -> bool:
    """Several words in capitals ("15% OFF YOUR FIRST CLASS"): ad copy or emphasis. People
    write a campaign's name in title case; only "Campaign X", "X campaign" or a quoted name
    makes capitals a name."""
    return len(ws) > 1 and all(w.isupper() for w in ws if any(c.isalpha() for c in w))


def names_a_platform(name: str) -> bool:
    """ "Google", "Meta Ads", "TikTok campaign", "Bing Shopping": an ad platform (with its
    product or channel words), never a campaign."""
    ws = [w.lower() for w in name.split()]
    return any(w in PLATFORM_WORDS for w in ws) and all(
        w in PLATFORM_WORDS or w in PLATFORM_PRODUCT_WORDS or w in CHANNEL_TERMS for w in ws
    )


def _a_code(word: str) -> bool:
    """A function word in capitals ("US" of "Pet Cover - US"): a code, which ends a name; a KPI
    in capitals ("CPA") still does not."""
    return acronym(word) and word.lower() in FUNCTION_WORDS


def _clean(name: str, sentence_start: bool = False, inferred: bool = False) -> str | None:
    """The name without KPI words after it or function words before it; at the start of a
    sentence, where every word is capitalised, without a leading verb ("Launched X - Y") or
    adverb ("Still Manual CPC"). Never a date; never capitals where the name is `inferred`
    (from its place before a KPI, a dash or a colon, not from the word campaign)."""
    ws = name.replace("\u2019", "'").strip(" .'\"").split()
    if sentence_start and len(ws) > 1 and _verb_like(ws[0]):
        ws = ws[1:]
    while sentence_start and len(ws) > 1 and ws[0].lower() in LEADING_WORDS:
        ws = ws[1:]
    if _a_date(ws) or (inferred and _shouted(ws)):
        return None
    while ws and ws[-1].lower().removesuffix("'s") in NOT_NAME_ENDS and not _a_code(ws[-1]):
        ws = ws[:-1]
    while ws and ws[0].lower() in FUNCTION_WORDS:
        ws = ws[1:]
    if ws and ws[-1].endswith("'s"):
        ws[-1] = ws[-1][:-2]
    name = " ".join(ws).strip(" .-")
    if not name or not any(w[0].isalpha() for w in ws) or ws[0].lower() in NOT_NAME_STARTS:
        return None
    return name if well_formed(name) else None


#: An ad platform's name, in lower case.
PLATFORM_WORDS = frozenset(p.lower() for p in PLATFORMS)
#: Longest stored name, in words, looked up as a phrase of the sentence.
MAX_KNOWN_WORDS = 8


#: Words a first part needs to stand for the whole name ("Brand" of "Brand - Exact" does not).
MIN_PART_WORDS = 2


def _first(name: str) -> str:
    return NAME_PARTS.split(name, maxsplit=1)[0]


def first_part(name: str) -> str | None:
    """A structured name's first part ("Lotus Mats" of "Lotus Mats - All Sizes"), when it
    has the words to stand for the whole; else None."""
    first = NAME_PARTS.split(name, maxsplit=1)[0]
    return first if first != name and len(first.split()) >= MIN_PART_WORDS else None


def _known_names(known: list[KnownEntity]) -> dict[str, str]:
    """Normalised name or alias -> stored name, for the user's campaigns. A structured name's
    first part ("Lotus Mats" of "Lotus Mats - All Sizes") stands for it too,
    as people shorten it, unless two campaigns share that part."""
    out: dict[str, str] = {}
    parts: dict[str, set[str]] = {}
    for entity in known:
        if entity.type != CAMPAIGN.type:
            continue
        for alias in (entity.name, *entity.aliases):
            key = normalize_name(alias)
            if len(key) >= 3 and len(key.split()) <= MAX_KNOWN_WORDS:
                out.setdefault(key, entity.name)
        if (first := first_part(entity.name)) is not None:
            parts.setdefault(normalize_name(first), set()).add(entity.name)
    for key, names in parts.items():
        if len(names) == 1:
            out.setdefault(key, names.pop())
    return out


def _capitalised(span: str) -> bool:
    """Every word starts with a capital: a first part stands for a campaign only as a name
    ("Water Heater ROAS"), not as words ("our water heater broke")."""
    return all(w[0].isupper() for w in span.split() if w[0].isalpha())


def _part_keys(known: list[KnownEntity]) -> frozenset[str]:
    """The normalised first parts among the known names (see `_known_names`)."""
    firsts = (first_part(e.name) for e in known if e.type == CAMPAIGN.type)
    return frozenset(normalize_name(f) for f in firsts if f is not None)


def _known_mentions(
    text: str, names: dict[str, str], parts: frozenset[str] = frozenset()
) -> list[Mention]:
    """Stored names in the sentence, by looking its word n-grams up (linear in the sentence,
    whatever the number of stored names)."""
    if not names:
        return []
    spans = [(m.start(), m.end(), normalize_name(m.group(0))) for m in WORD_SPAN.finditer(text)]
    found: list[Mention] = []
    i = 0
    while i < len(spans):
        for n in range(min(MAX_KNOWN_WORDS, len(spans) - i), 0, -1):
            key = " ".join(w for _, _, w in spans[i : i + n])
            start, end = spans[i][0], spans[i + n - 1][1]
            if key in names and (key not in parts or _capitalised(text[start:end])):
                found.append(Mention(names[key], start, end))
                i += n
                break
        else:
            i += 1
    return found


class MentionFinder:
    """Finds campaign mentions; built once per extraction from the known entities."""

    def __init__(self, known: list[KnownEntity]) -> None:
        self._entities = [e for e in known if e.type == CAMPAIGN.type]
        self._index()

    def _index(self) -> None:
        self._known = _known_names(self._entities)
        self._parts = _part_keys(self._entities)
        self._last: tuple[str | None, list[Mention]] = (None, [])
        self._by_norm = {normalize_name(e.name): e.name for e in self._entities}

    def learn(self, names: Iterable[str]) -> None:
        """Campaigns the session itself has named ("X: $40/day, Manual CPC") are found again
        when a later sentence names them as plainly as a stored one ("X is on Target CPA
        now"), so a change later in the session is read as the stored campaign's would be."""
        new = {n for n in names if normalize_name(n) not in self._by_norm}
        if new:
            self._entities += [KnownEntity(CAMPAIGN.type, f"session:{n}", n) for n in sorted(new)]
            self._index()

    def named_by_part(self, text: str) -> str | None:
        """The one campaign `text` names whole, by an alias or as its structured name's first
        part however short ("Lotus" of "Lotus - All Mats", "EU" of "EU - Shop"). Only where the
        place says a campaign is meant (a KPI row's "(EU)"): in running text a short part is
        too often a word ("US sales")."""
        key = normalize_name(text)
        if key in self._by_norm or key in self._known:
            return self.canonical(text)
        owners = {e.name for e in self._entities if normalize_name(_first(e.name)) == key}
        return owners.pop() if len(owners) == 1 else None

    def canonical(self, name: str) -> str:
        """The stored name of a campaign found by its name, an alias or its first part."""
        key = normalize_name(name)
        return self._by_norm.get(key) or self._known.get(key, name)

    def find(self, text: str) -> list[Mention]:
        """The mentions of one sentence (every detector asks about the same sentence, so the
        answer is kept for the sentence last asked about)."""
        if text != self._last[0]:
            self._last = (text, self._find(text))
        return self._last[1]

    def _find(self, text: str) -> list[Mention]:
        """The user's campaigns, then names read from the sentence (one that names an ad
        platform is the platform's mention)."""
        found = [
            Mention(m.name, m.start, m.end, platform=True) if names_a_platform(m.name) else m
            for m in self._read_names(text)
        ]
        return _without_overlaps(_known_mentions(text, self._known, self._parts) + found)

    def _read_names(self, text: str) -> list[Mention]:
        found: list[Mention] = []
        for m in CAMPAIGN_PREFIXED.finditer(text):
            name = _clean(m.group(0))
            if name and len(name.split()) > 1:
                found.append(Mention(self.canonical(name), m.start(), m.end()))
        for m in CAMPAIGN_SUFFIXED.finditer(text):
            name = _clean(m.group("name"), m.start() == 0)
            if name and self._distinctive(name, m.start("name"), text):
                found.append(Mention(self.canonical(name), m.start(), m.end()))
        for m in CAMPAIGN_QUOTED.finditer(text):
            name = _clean(m.group("a") or m.group("b") or "")
            if name:
                found.append(Mention(self.canonical(name), m.start(), m.end()))
        for m in PROPER_BEFORE_KPI.finditer(text):
            name = _clean(m.group("name"), m.start() == 0, inferred=True)
            if name and self._distinctive(name, m.start("name"), text):
                found.append(Mention(self.canonical(name), m.start(), m.end("name")))
        label = LABELLED_LINE.match(text)
        if label and FACT_AFTER_LABEL.search(label.group("rest")[:60]):
            name = _clean(label.group("name"), True, inferred=True)
            if name and (len(name.split()) > 1 or "-" in name):
                found.append(Mention(self.canonical(name), 0, label.end("name")))
        for m in DASHED_NAME.finditer(text):
            name = _clean(m.group("name"), m.start() == 0, inferred=True)
            if name:
                found.append(Mention(self.canonical(name), m.start(), m.end()))
        for m in PLATFORM_RE.finditer(text):
            if not text.startswith(("'s", "\u2019s"), m.end()):
                found.append(Mention(m.group("name"), m.start(), m.end(), platform=True))
        return found

    @staticmethod
    def _distinctive(name: str, start: int, text: str) -> bool:
        """One capitalised word at the start of a sentence, or a bare channel word, is not a
        name ("Search campaign", "Overall ROAS")."""
        ws = name.split()
        if len(ws) == 1 and (not text[:start].strip() or ws[0].lower() in CHANNEL_TERMS):
            return False
        return not all(w.lower() in CHANNEL_TERMS for w in ws)


def _without_overlaps(found: list[Mention]) -> list[Mention]:
    """The earliest-listed (known names first), then longest, mention wins each span."""
    kept: list[Mention] = []
    for m in sorted(found, key=lambda m: (m.start, -(m.end - m.start))):
        if kept and m.start < kept[-1].end:
            continue
        kept.append(m)
    return kept
