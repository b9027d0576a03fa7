"""The offline `rules` extractor: the ads vocabulary in regular expressions, no model needed.

Deterministic, pure Python (only `re` and the project's own modules), so it runs the same under
CPython and Pyodide and costs no tokens. It reads a session the way an analyst skims one:

- campaigns: names from `known` (and their aliases and short forms), dashed names
  ("NB - AP Automation - US"), capitalised names ending in a channel ("Trail Runners Search",
  "Summer Sandals PMax"), "the X campaign", list and table rows ("- X: $40/day, Manual CPC"),
  objects of actions ("Paused X", "Launched X at ..."); strategy, daily budget and status;
- metrics: a KPI (CPA, ROAS, CTR, CPC, CPM, conversion rate, impression share, cost per <noun>,
  "<a>-to-<b> rate", spend, conversions, margin, ...) next to a value with its unit ("$42",
  "3.2x", "310%", "forty dollars", "52 bucks per sale"), attributed to the campaign named in
  the same line (or its heading, or the campaign the user just asked about); named
  "<campaign short name> <KPI>" ("Trail Runners CPA", "Emergency avg CPC") so every session
  gives the same name, or a stored metric's name for the same campaign and KPI;
- decisions: actions the agent reports as done ("Paused X", "Switched X from A to B",
  "Raised X to $72/day", "Done: ..."), user instructions ("let's pause X", "go ahead and raise
  the budget to $80/day"), agreement to a proposal ("ok do it" after "I'd ..."), deferrals
  ("don't touch anything yet", "wait 2 weeks"); with the rationale (because / logged why /
  the proposal and the user's words) and the campaigns affected;
- pain points: user complaints (frustration words, "again", "still", "keeps", "third time")
  on a topic (a small lexicon of ads problems, or a stored pain point sharing words with the
  complaint), with severity, frequency and resolution ("fixed", "finally", "solved");
- preferences: communication (short, bullets, plain English, tables, big picture), analysis
  (what to judge on), risk (budget-change caps, experiment caps, risk appetite, no tests on X),
  reporting (cadence, cc, what to flag), and revisions of earlier ones (same name, new value).

Importance follows the SPEC: 0.9+ explicit decisions, critical metrics, stated preferences;
0.5-0.8 mentioned campaigns, context metrics, implied preferences; below 0.5 background.
Content keeps the source sentences, so values stay as written ("$52", "310% ROAS").
Candidates are validated against models.py before they leave; failures become rejections.
Run `bench/bench_extraction.py` for recall on the dev set.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from entity_memory.domain.models import entity_input_adapter
from entity_memory.domain.text import fold, normalize_name, tokenize
from entity_memory.extraction.base import ExtractionResult, KnownEntity, Message

# --- numbers and values --------------------------------------------------------------------------

_UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19,
}  # fmt: skip
_TENS = {
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
    "eighty": 80, "ninety": 90,
}  # fmt: skip
_NUMWORD = (
    r"(?:(?:"
    + "|".join(_TENS)
    + r")(?:[- ](?:"
    + "|".join(k for k in _UNITS if k != "zero")
    + r"))?|"
    + "|".join(sorted(_UNITS, key=len, reverse=True))
    + r")"
    r"(?: hundred(?: and)?(?: " + "|".join(_TENS) + r")?)?"
)
_NUM = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
_APPROX = r"(?:(?:about|around|roughly|approx\.?|approximately|nearly|almost|~)\s*)"
_VALUE_RE = re.compile(
    r"(?P<money>\$\s?" + _NUM + r"\s?(?:[kKmM]\b)?(?:\s?/\s?(?:day|month|mo|week)\b"
    r"| (?:a|per) (?:day|month|week)\b)?)"
    r"|(?P<money2>\b" + _NUM + r"\s?(?:[kK]\s)?(?:dollars|bucks|usd)\b(?: (?:a|per) day\b)?)"
    r"|(?P<money3>\b" + _NUMWORD + r"\s(?:dollars|bucks)\b)"
    r"|(?P<pct>\b" + _NUM + r"\s?%|\b" + _NUMWORD + r" percent\b|\b" + _NUM + r" percent\b)"
    r"|(?P<mult>\b\d+(?:\.\d+)?x\b)"
    r"|(?P<num>\b" + _NUM + r"\b(?![-/:]\d))",
    re.IGNORECASE,
)


def _words_to_number(text: str) -> float | None:
    total = 0
    seen = False
    for w in re.split(r"[\s-]+", text.lower()):
        if w in _UNITS:
            total += _UNITS[w]
            seen = True
        elif w in _TENS:
            total += _TENS[w]
            seen = True
        elif w == "hundred":
            total = (total or 1) * 100
            seen = True
    return float(total) if seen else None


def _parse_number(text: str) -> float | None:
    m = re.search(_NUM, text)
    if not m:
        return _words_to_number(text)
    value = float(m.group(0).replace(",", ""))
    tail = text[m.end() : m.end() + 2].strip().lower()
    if tail.startswith("k"):
        value *= 1000
    elif tail.startswith("m") and not text[m.end() :].strip().lower().startswith("mo"):
        value *= 1_000_000
    return value


@dataclass
class _Value:
    start: int
    end: int
    text: str
    kind: str  # money | pct | mult | num
    value: float | None


def _values(text: str) -> list[_Value]:
    out = []
    for m in _VALUE_RE.finditer(text):
        kind = m.lastgroup or "num"
        kind = "money" if kind.startswith("money") else kind
        raw = m.group(0)
        if kind == "num" and re.fullmatch(r"(19|20)\d\d", raw):
            continue  # a year
        out.append(_Value(m.start(), m.end(), raw.strip(), kind, _parse_number(raw)))
    return out


_UNIT_OF = {"money": "USD", "pct": "%", "mult": "x", "num": "count"}

# --- vocabulary ----------------------------------------------------------------------------------

_CHANNELS = (
    r"Search|Shopping|PMax|P-Max|Performance Max|Display|Video|YouTube|Discovery|Demand Gen"
    r"|Remarketing|Retargeting|RLSA|DSA|Local|Smart|App|Brand|Non-Brand|NB|Generic|Competitor"
    r"|Competitors|Prospecting"
)
_STRATEGY_RE = re.compile(
    r"\b(?P<s>manual cpc|enhanced cpc|ecpc|maxim[iu][sz]e conversion value|maxim[iu][sz]e "
    r"conversions|max conversions|maxim[iu][sz]e clicks|target cpa|tcpa|t-cpa|target roas|troas"
    r"|t-roas|target impression share)\b(?:\s*(?:at|of|=|is now|now|on the [\w ]+ conversion at)?"
    r"\s*,?\s*(?P<v>\$\s?"
    + _NUM
    + r"[kK]?(?!\d|[,.]\d|\s?/\s?day| a day| per day)|"
    + _NUM
    + r"\s?%))?",
    re.IGNORECASE,
)
_STRATEGY_NAMES = {
    "manual cpc": "Manual CPC", "enhanced cpc": "Enhanced CPC", "ecpc": "Enhanced CPC",
    "maximize conversion value": "Maximize Conversion Value",
    "maximize conversions": "Maximize Conversions", "max conversions": "Maximize Conversions",
    "maximize clicks": "Maximize Clicks", "target cpa": "Target CPA", "tcpa": "Target CPA",
    "t-cpa": "Target CPA", "target roas": "Target ROAS", "troas": "Target ROAS",
    "t-roas": "Target ROAS", "target impression share": "Target Impression Share",
}  # fmt: skip

#: Words that are never a campaign name on their own (tools, strategies, calendar, people words).
_NOT_NAMES = set(
    """google ads analytics ga4 gtm shopify hubspot salesforce crm the a an my our your their i we
    you it this that these those monday tuesday wednesday thursday friday saturday sunday january
    february march april may june july august september october november december q1 q2 q3 q4
    target cpa roas ctr cpc cpm manual maximize maximise enhanced smart bidding budget done noted
    paused launched switched raised set added moved resumed updated lowered reduced created
    understood agreed yes ok okay sure hi hello thanks welcome got will sounds great good quick
    option options proposal rationale logged step next last first second third also and but so
    then if when what how why who where which here there all both each every no not""".split()
)
#: Words too generic to stand alone as a campaign's short alias.
_GENERIC = set(
    """standard summer winter spring fall autumn holiday general main new old all search shopping
    display video brand generic local demand water trail exact phrase broad us uk eu ca au test
    products product services service campaign campaigns packages offers sale sales""".split()
)
_LEAD_WORDS = set(
    """the a an my our your their its this that these those new old paused launched switched
    raised set added moved resumed updated lowered reduced created call called named noted
    restarted enabled keep kept turn turned pause launch switch raise lower resume move""".split()
)

_CAPW = r"(?:[A-Z][A-Za-z0-9&'+]*(?:-[A-Za-z0-9]+)*|[0-9]+)"
_DASHED_RE = re.compile(
    r"(?<![\w-])("
    + _CAPW
    + r"(?: "
    + _CAPW
    + r"){0,4}(?: [-\u2013] "
    + _CAPW
    + r"(?: "
    + _CAPW
    + r"){0,4}){1,3})(?![\w-])"
)
_CHANNEL_NAME_RE = re.compile(
    r"(?<![\w-])((?:" + _CAPW + r" ){1,4}(?:" + _CHANNELS + r"))(?![\w-])"
)
_THE_X_CAMPAIGN_RE = re.compile(r"\b((?:" + _CAPW + r" ){1,4})campaign\b")
#: 'Spring Sale 2026' campaign, the campaign called "Back to School"
_LOWER_CAMPAIGN_RE = re.compile(
    r"\b(?:our|the|my|your|that|this) ((?:[a-z][a-z0-9&-]* ){0,2}[a-z][a-z0-9&-]*) campaign\b"
)
#: Words that open a noun phrase but never a campaign's name.
_LOWER_SKIP = set(
    """whole same other best main entire current existing old new one only first last every
    each any some google ads ad paid search""".split()
)
_QUOTED_CAMPAIGN_RE = re.compile(
    r"['\"\u2018\u201c]([A-Z0-9][^'\"\u2019\u201d]{1,60}?)['\"\u2019\u201d]\s+(?:campaign|one)\b|"
    r"\bcampaign (?:called|named) ['\"\u2018\u201c]([^'\"\u2019\u201d]{2,60})['\"\u2019\u201d]"
)
_ACTION_OBJECT_RE = re.compile(
    r"(?:^|[.:;!?]\s+|\n|\b(?:Done|done)[:,]\s*)(?:I(?:'ve| have)?\s+)?(?:Paused|Resumed|Launched|"
    r"Restarted|Re-enabled|Enabled|Raised|Lowered|Set|Switched|Moved|Created|Call it|called|"
    r"named)\s+(" + _CAPW + r"(?:[ -]+" + _CAPW + r"){0,6})"
)
_LIST_ROW_RE = re.compile(
    r"^\s*(?:[-*•]\s*|\d+[.)]\s*)?(" + _CAPW + r"(?:[ -]+" + _CAPW + r"){0,6})\s*:\s*(.+)$"
)
_CAMPAIGN_ATTR_RE = re.compile(
    r"\$[\d,.]+\s?(?:/day|a day|per day)|manual cpc|maxim|target cpa|tcpa|troas|target roas"
    r"|\broas\b|\bcpa\b|spent|impression share|paused|launched|cost per|per (?:lead|demo|click)"
    r"|enquir|conversions|budget",
    re.IGNORECASE,
)


def _clean_name(name: str) -> str:
    words = name.strip(" -\u2013|:,.").split()
    while words and words[0].lower() in _LEAD_WORDS:
        words = words[1:]
    while words and words[-1] in {"-", "\u2013", "|"}:
        words = words[:-1]
    return " ".join(words).strip(" -\u2013|")


def _plausible_campaign(name: str) -> bool:
    if not name or len(name) > 80:
        return False
    words = [w for w in re.split(r"[\s\-\u2013|]+", name) if w]
    if not words:
        return False
    if all(w.lower() in _NOT_NAMES for w in words):
        return False
    if _STRATEGY_RE.fullmatch(name) or re.fullmatch(r"[\d\s$%.,x-]+", name):
        return False
    if words[0].lower() in _NOT_NAMES and len(words) < 3:
        return False
    return not re.search(r"\b(?:CPA|ROAS|CTR|CPC|CPM|Spend|Demos|Metric|Campaign)$", name)


def short_name(campaign: str, others: tuple[str, ...] = (), head_used: bool = False) -> str:
    """The campaign's everyday name: its first ` - ` segment, without a trailing "Search"
    (the default channel). "Trail Runners Search" -> "Trail Runners", "NB - AP Automation - US"
    -> "NB", "Standard Shopping - All Products" -> "Standard Shopping"; its distinctive head word
    alone when people call it that (`head_used`), the segment is two words and no other
    campaign (`others`) starts with it: "Emergency Plumber - Search" -> "Emergency"."""
    segs = re.split(r"\s+[-\u2013|]\s+", campaign.strip())
    first = segs[0]
    if len(segs) > 1 and re.fullmatch(_CHANNEL_TYPES, first, re.IGNORECASE):
        first = segs[1]  # "Demand Gen - Retargeting" -> "Retargeting"
    words = first.split()
    while len(words) > 1 and words[-1].lower() in _TYPE_SUFFIXES:
        words = words[:-1]
    if (
        head_used
        and len(words) == 2
        and len(words[0]) >= 6
        and words[0].isalpha()
        and words[0].lower() not in _GENERIC
        and not re.fullmatch(_CHANNELS, words[1])
        and not any(o != campaign and fold(o).split()[:1] == [fold(words[0])] for o in others)
    ):
        words = words[:1]
    return " ".join(words) or campaign


_CHANNEL_TYPES = (
    r"Search|Shopping|PMax|P-Max|Performance Max|Display|Video|YouTube|Discovery|Demand Gen|App"
)
#: Trailing words that say what kind of campaign it is, not which one.
_TYPE_SUFFIXES = {"search", "campaign", "packages", "package", "replacement", "deals", "offers"}


def _campaign_aliases(name: str) -> list[str]:
    """Forms a campaign is called by in conversation, longest first."""
    out = [name]
    segs = re.split(r"\s+[-\u2013|]\s+", name.strip())
    short = short_name(name)
    out.append(short)
    if len(segs) > 1:
        out.append(segs[0])
        last = segs[-1]
        if " " not in last and len(last) >= 6 and last.lower() not in _GENERIC:
            out.append(last)
    words = segs[0].split()
    if len(words) >= 3:
        out.append(" ".join(words[:2]))
    if len(words) >= 2:
        if (
            len(words) == 2
            and len(words[0]) >= 6
            and words[0].lower() not in _GENERIC
            and not re.fullmatch(_CHANNELS, words[1])
        ):
            out.append(words[0])
        rest = words[1:]
        if len(rest) >= 2:
            out.append(" ".join(rest))
    if short.upper() == "NB":
        out += ["non-brand", "non brand", "nonbrand"]
    seen: list[str] = []
    for a in out:
        a = a.strip()
        if a and normalize_name(a) not in {normalize_name(s) for s in seen}:
            seen.append(a)
    return seen


# KPI lexicon: (pattern, label, value kinds allowed)
_KPIS: list[tuple[str, str, tuple[str, ...]]] = [
    (
        r"target cpa|tcpa|target roas|troas|manual cpc|enhanced cpc|maxim[iu][sz]e clicks",
        "",
        (),
    ),  # bid targets: campaign strategy, not a KPI
    (
        r"lost (?:search )?impression share(?: (?:to|due to) (?:budget|rank))?|(?:search )?"
        r"impression share (?:lost )?(?:to|due to) (?:budget|rank)",
        "lost impression share",
        ("pct",),
    ),
    (r"(?:search )?impression share", "impression share", ("pct",)),
    (r"\bROAS\b|return on ad ?spend", "ROAS", ("pct", "mult", "roas_num")),
    (r"\bCTR\b|click[- ]through rate", "CTR", ("pct",)),
    (r"\bCVR\b|conv(?:ersion)?\.? rate", "conversion rate", ("pct",)),
    (r"(?:avg\.? |average )?\bCPCs?\b|(?:avg\.? |average )?cost per click", "avg CPC", ("money",)),
    (r"\bCPM\b|cost per (?:thousand|mille)", "CPM", ("money",)),
    (
        r"\bCPA\b|cost per (?:acquisition|conversion|action|sale|purchase|order|customer)",
        "CPA",
        ("money",),
    ),
    (r"\bCPL\b", "cost per lead", ("money",)),
    (r"cost ?(?:per|/) ?(?P<noun>[a-z][\w-]*)", "cost per {noun}", ("money",)),
    (r"(?P<noun>[a-z]+)-to-(?P<noun2>[a-z]+)(?: rate)?", "{noun}-to-{noun2} rate", ("pct",)),
    (
        r"(?P<noun>match|close|booking|bounce|open|win|show|answer|approval) rate",
        "{noun} rate",
        ("pct",),
    ),
    (
        r"(?P<noun>leads|enquiries|inquiries|clicks|calls|bookings|demos|sqls|signups|sign-ups) "
        r"(?:now )?(?:run|cost|costing|are costing|come in at)",
        "cost per {noun}",
        ("money",),
    ),
    (r"(?P<noun>junk|spend|budget|traffic|mobile|brand|non-brand) share", "{noun} share", ("pct",)),
    (r"\bmargins?\b", "margin", ("money", "pct")),
    (r"\bAOV\b|average order value", "average order value", ("money",)),
    (
        r"(?:avg\.? |average )(?P<noun>booking|order|job|sale|deal)(?: value| size)?|"
        r"(?P<noun2>booking|order|job|sale|deal)s averaging",
        "average {noun} value",
        ("money",),
    ),
    (
        r"(?P<noun>booking|order|job|deal|customer) (?:value|is worth|worth)",
        "{noun} value",
        ("money",),
    ),
    (r"\b(?:LTV|lifetime value)\b", "lifetime value", ("money",)),
    (r"\bpipeline\b", "pipeline", ("money",)),
    (
        r"\b(?:total|account|monthly|daily|ad|[a-z]+uary|march|april|may|june|july|august|september|"
        r"october|november|december) spend\b(?! allowance)",
        "spend",
        ("money",),
    ),
]
_KPI_RES = [(re.compile(p, re.IGNORECASE), label, kinds) for p, label, kinds in _KPIS]
_COUNT_NOUNS = (
    r"conversions|leads|sales|orders|bookings|enquiries|inquiries|demos|SQLs|calls|signups"
    r"|consultations|consults|quotes|visits|patients|registrations|applications|downloads"
    r"|subscribers|members|tickets|reservations|enrollments|donations"
    r"|sign-ups|purchases|installs|trials|appointments|jobs|clicks"
)
_PER_NOUN_RE = re.compile(
    r"\s*(?:(?:per|a|an|for each)\s+|/\s*)(?:(?:new|additional|extra|single|qualified|booked|"
    r"closed|paying|completed|successful) )?"
    r"(?P<noun>lead|enquiry|inquiry|demo|sql|booking|call|sale"
    r"|order|conversion|acquisition|purchase|customer|click|signup|sign-up|trial"
    r"|appointment|mql|consultation|consult|quote|visit|patient|registration|application"
    r"|download|subscriber|member|ticket|reservation|enrollment|enrolment|donation|donor"
    r"|student|install(?=s? cost)|job(?=s? cost)"
    r"|(?!(?:day|week|month|year|hour|minute|night|mile|km|kilometer|unit|item|install|job|"
    r"person|head|piece|pound|kg|lb|square|sq|foot|ft|cent|dollar|impression|thousand|mille|"
    r"cent|share|time|side|each|the|a|an|right|now|week|while|lot|bit|few|couple)s?\b)"
    r"[a-z]{3,}(?<!s))\b",
    re.IGNORECASE,
)
_PREV_MARK = re.compile(
    r"(?:\bfrom|\bwas|\bwere|\bbefore|\bvs\.?|\bversus|\bcompared (?:with|to)|\bthan|\bthe)\s*"
    + _APPROX
    + r"?$",
    re.IGNORECASE,
)
_NOT_METRIC_AFTER = re.compile(r"^\s*(?:/\s?day|a day|per day|/mo|a month|per month)", re.I)

_SINGULAR = {
    "enquiries": "enquiry", "inquiries": "inquiry", "sqls": "SQL", "sql": "SQL", "mqls": "MQL",
    "mql": "MQL",
}  # fmt: skip


def _singular(noun: str) -> str:
    n = noun.lower()
    if n in _SINGULAR:
        return _SINGULAR[n]
    if n.endswith("ies") and len(n) > 4:
        return n[:-3] + "y"
    if n.endswith("s") and not n.endswith("ss") and len(n) > 3:
        return n[:-1]
    return n


def _format_label(label: str, m: re.Match[str]) -> str:
    """A KPI label with the nouns the pattern captured: "cost per {noun}" -> "cost per demo"."""
    if "{noun" not in label:
        return label
    gd = m.groupdict()
    noun = (gd.get("noun") or gd.get("noun2") or "").lower()
    if not noun or noun == "thousand":
        return ""
    if label.startswith("cost per"):
        return _kpi_label(noun)
    lab = label.format(noun=noun, noun2=(gd.get("noun2") or "").lower())
    return re.sub(r"\bsqls?\b", "SQL", lab, flags=re.I)


def _kpi_label(noun: str) -> str:
    n = _singular(noun)
    if n in {"sale", "acquisition", "conversion", "purchase", "customer", "order", "action"}:
        return "CPA"
    if n == "click":
        return "avg CPC"
    return f"cost per {n}"


# --- session model -------------------------------------------------------------------------------


@dataclass
class _Unit:
    msg: int
    role: str
    line: int
    text: str
    start: int  # offset of the sentence in its line
    line_text: str


@dataclass
class _Campaign:
    name: str
    aliases: list[str]
    known: bool = False
    units: list[int] = field(default_factory=list)
    user_mentioned: bool = False
    #: called by its head word alone ("emergency is busy"), here or in a stored alias
    head_used: bool = False


@dataclass
class _Acc:
    """An entity being assembled from one or more sentences of the session."""

    type: str
    name: str
    importance: float
    metadata: dict[str, Any]
    aliases: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    head: str = ""

    def add_line(self, text: str) -> None:
        text = " ".join(text.split())
        if text and text not in self.lines:
            self.lines.append(text)

    def add_alias(self, alias: str) -> None:
        alias = " ".join(alias.split()).strip(" .,:;!?'\"")
        if (
            alias
            and len(alias) <= 80
            and normalize_name(alias) != normalize_name(self.name)
            and normalize_name(alias) not in {normalize_name(a) for a in self.aliases}
            and len(self.aliases) < 12
        ):
            self.aliases.append(alias)

    def render(self) -> dict[str, Any]:
        body = " ".join(self.lines)
        content = f"{self.head} {body}".strip() if self.head else body
        if len(content) > 1500:
            content = content[:1497].rstrip() + "..."
        return {
            "type": self.type,
            "name": self.name[:200],
            "content": content,
            "importance": round(min(1.0, max(0.0, self.importance)), 2),
            "metadata": self.metadata,
            "aliases": self.aliases,
        }


_BULLET = re.compile(r"^\s*(?:[-*•|]|\d+[.)])")
_SENT_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Za-z0-9'\"$(\[~])")
_ABBREV_END = re.compile(
    r"(?:\b(?:vs|e\.g|i\.e|approx|avg|etc|mr|mrs|ms|dr|st|inc|ltd|no|wk|mo)\.|^\s*(?:[-*•]\s*)?"
    r"\d+[.)]|\b[A-Z]\.)$",
    re.IGNORECASE,
)


def _sentences(line: str) -> list[str]:
    parts: list[str] = []
    for part in _SENT_SPLIT.split(line):
        if parts and _ABBREV_END.search(parts[-1]):
            parts[-1] = f"{parts[-1]} {part}"
        else:
            parts.append(part)
    return parts


def _segment(messages: list[Message]) -> list[_Unit]:
    units: list[_Unit] = []
    for mi, m in enumerate(messages):
        for li, line in enumerate(m.content.split("\n")):
            if not line.strip():
                continue
            pos = 0
            for part in _sentences(line):
                idx = line.find(part, pos)
                if idx < 0:
                    idx = line.find(part.split()[0], pos) if part.split() else pos
                pos = idx + len(part)
                if part.strip():
                    units.append(_Unit(mi, m.role, li, part.strip(), max(idx, 0), line))
    return units


_HYPOTHETICAL = re.compile(
    r"\b(?:i'?d|i would|we could|we can|could|should|would|might|suggest|recommend|propose|"
    r"option [a-z0-9]|if we|if you|plan to|will|i'll|we'll|thinking|want|wants)\b",
    re.IGNORECASE,
)


class RulesExtractor:
    """Regex rules over the ads vocabulary; see the module docstring."""

    name = "rules"

    async def extract(
        self, messages: list[Message], known: list[KnownEntity], now_ms: int
    ) -> ExtractionResult:
        result = ExtractionResult(extractor=self.name)
        for cand in extract_candidates(messages, known):
            try:  # a pattern bug must surface as a rejection, never as bad data downstream
                entity_input_adapter.validate_python(cand)
            except ValueError as exc:
                result.rejected.append({"item": cand, "reason": str(exc)[:500]})
            else:
                result.candidates.append(cand)
        return result


def extract_candidates(messages: list[Message], known: list[KnownEntity]) -> list[dict[str, Any]]:
    """The synchronous core of `RulesExtractor.extract`."""
    return _Session(messages, known).run()


class _Session:
    def __init__(self, messages: list[Message], known: list[KnownEntity]) -> None:
        self.messages = messages
        self.known = known
        self.units = _segment(messages)
        #: unit indexes per message, and each bullet unit's heading (the nearest earlier
        #: non-bullet unit of its message, or -1), computed once: sessions can be long.
        self.msg_units: dict[int, list[int]] = {}
        self.heading: list[int] = []
        last_plain: dict[int, int] = {}
        for i, u in enumerate(self.units):
            self.msg_units.setdefault(u.msg, []).append(i)
            self.heading.append(last_plain.get(u.msg, -1))
            if not _BULLET.match(u.line_text):
                last_plain[u.msg] = i
        self._text_cache: dict[int, str] = {}
        self.complained: dict[int, set[int]] = {}  # pain point (id) -> user messages
        self.out: dict[tuple[str, str], _Acc] = {}
        self.campaigns: dict[str, _Campaign] = {}
        self.mentions: list[list[tuple[int, int, str]]] = []  # per unit: (start, end, campaign)
        self.mention_rx: re.Pattern[str] | None = None
        self.alias_to: dict[str, str] = {}

    # -- plumbing --

    def short(self, campaign: str) -> str:
        others = tuple(c.name for c in self.campaigns.values()) + tuple(
            k.name for k in self.known if k.type == "campaign"
        )
        c = self.campaigns.get(normalize_name(campaign))
        return short_name(campaign, others, head_used=bool(c and c.head_used))

    def acc(self, type_: str, name: str, importance: float, metadata: dict[str, Any]) -> _Acc:
        name = self.reuse_name(type_, name)
        key = (type_, normalize_name(name))
        cur = self.out.get(key)
        if cur is None:
            cur = self.out[key] = _Acc(type_, name, importance, metadata)
        else:
            cur.importance = max(cur.importance, importance)
        return cur

    def reuse_name(self, type_: str, name: str) -> str:
        """A stored entity's name when `name` equals it or one of its aliases; for metrics, also
        a stored name that differs only by filler ("Trail Runners Search CPA")."""
        norm = normalize_name(name)
        for k in self.known:
            if k.type != type_:
                continue
            if norm == normalize_name(k.name) or norm in {normalize_name(a) for a in k.aliases}:
                return k.name
        if type_ == "metric":
            mine = set(tokenize(name))
            for k in self.known:
                if k.type == type_ and mine:
                    theirs = set(tokenize(k.name))
                    if theirs and (mine ^ theirs) <= _METRIC_FILLER:
                        return k.name
        return name

    def run(self) -> list[dict[str, Any]]:
        self.find_campaigns()
        self.find_metrics()
        self.find_decisions()
        self.find_pain_points()
        self.find_preferences()
        self.emit_campaigns()
        cands = [a.render() for a in self.out.values() if a.name.strip()]
        return cands

    # -- campaigns --

    def add_campaign(self, name: str, known: bool = False, aliases: tuple[str, ...] = ()) -> None:
        name = _clean_name(name)
        if not _plausible_campaign(name) and not known:
            return
        norm = normalize_name(name)
        for c in self.campaigns.values():
            if norm in {normalize_name(a) for a in c.aliases}:
                return  # already known under a longer or stored name
        for key, c in list(self.campaigns.items()):
            if not c.known and normalize_name(c.name) in {
                normalize_name(a) for a in _campaign_aliases(name)
            }:
                del self.campaigns[key]  # a short form seen first; keep the full name
        al = _campaign_aliases(name) + [a for a in aliases if a]
        head = fold(name).split()[0] if name.split() else ""
        used = any(normalize_name(a) == head for a in aliases)
        self.campaigns[norm] = _Campaign(name, al, known=known, head_used=used)

    def find_campaigns(self) -> None:
        for k in self.known:
            if k.type == "campaign":
                self.add_campaign(k.name, known=True, aliases=k.aliases)
        found: list[str] = []
        for u in self.units:
            t = u.text
            if u.line_text.lstrip().startswith("|"):
                continue
            for rx in (_DASHED_RE, _CHANNEL_NAME_RE, _ACTION_OBJECT_RE):
                for m in rx.finditer(t):
                    found.append(m.group(1))
            for m in _THE_X_CAMPAIGN_RE.finditer(t):
                found.append(m.group(1))
            for m in _QUOTED_CAMPAIGN_RE.finditer(t):
                found.append(m.group(1) or m.group(2))
            if u.start == 0:
                lm = _LIST_ROW_RE.match(u.line_text)
                if lm and _CAMPAIGN_ATTR_RE.search(lm.group(2)):
                    found.append(lm.group(1))
        # tables whose first column is the campaign
        for mi, m in enumerate(self.messages):
            for row in self.table_rows(mi, m.content, "campaign"):
                found.append(row[0])
        # longest first, so a full name wins over its short forms
        cleaned = [_clean_name(f) for f in found]
        for name in sorted(dict.fromkeys(cleaned), key=lambda s: (-len(s), s)):
            self.add_campaign(name)
        self.lowercase_campaigns()
        self.index_mentions()

    def lowercase_campaigns(self) -> None:
        """ "our estate planning campaign", "the remarketing campaign": a campaign named in
        lowercase, unless its words belong to a campaign already known by a fuller name."""
        words_of = [set(re.split(r"[\s\-\u2013|]+", fold(c.name))) for c in self.campaigns.values()]
        for u in self.units:
            for m in _LOWER_CAMPAIGN_RE.finditer(fold(u.text)):
                words = [w for w in m.group(1).split() if w]
                while words and (words[0] in _NOT_NAMES or words[0] in _LOWER_SKIP):
                    words = words[1:]
                generic = not words or all(w in _GENERIC or w in _NOT_NAMES for w in words)
                channel = len(words) == 1 and re.fullmatch(_CHANNELS, words[0], re.I)
                if generic and not channel:
                    continue
                stems = {w.rstrip("s") for w in words}
                if any(stems <= {x.rstrip("s") for x in ws} for ws in words_of):
                    continue
                name = " ".join(
                    w.upper() if len(w) <= 3 and w not in _GENERIC else w.title() for w in words
                )
                self.add_campaign(name)
                words_of.append(set(words))

    def index_mentions(self) -> None:
        alias_to: dict[str, str] = {}
        for key, c in self.campaigns.items():
            for a in c.aliases:
                alias_to.setdefault(normalize_name(a), key)
        pats = sorted(alias_to, key=len, reverse=True)
        self.mentions = [[] for _ in self.units]
        self.alias_to = alias_to
        if not pats:
            return
        rx = self.mention_rx = re.compile(
            r"(?<![\w$])("
            + "|".join(r"[\s\-\u2013|]+".join(map(re.escape, p.split())) for p in pats)
            + r")(?![\w])",
            re.IGNORECASE,
        )
        words: dict[str, set[str]] = {}
        for key, c in self.campaigns.items():
            for w in re.split(r"[\s\-\u2013|]+", fold(c.name)):
                if len(w) >= 4 and w not in _GENERIC and w not in _NOT_NAMES:
                    words.setdefault(w, set()).add(key)
        for i, u in enumerate(self.units):
            folded = fold(u.text)
            for m in re.finditer(
                r"\b(?:the|that|this|our|my|your)\s+([a-z0-9-]+)\s+(?:one|campaign|thing)\b", folded
            ):
                w = m.group(1)
                keys = words.get(w) or words.get(w.rstrip("s")) or words.get(w + "s") or set()
                if len(keys) == 1:
                    key = next(iter(keys))
                    self.mentions[i].append((m.start(), m.end(), key))
                    if i not in self.campaigns[key].units:
                        self.campaigns[key].units.append(i)
            for m in rx.finditer(folded):
                key = alias_to.get(normalize_name(m.group(1)))
                if key is None:
                    continue
                self.mentions[i].append((m.start(), m.end(), key))
                c = self.campaigns[key]
                if i not in c.units:
                    c.units.append(i)
                if u.role == "user":
                    c.user_mentioned = True
                head = fold(c.name).split()[0] if c.name.split() else ""
                if normalize_name(m.group(1)) == head and len(c.name.split()) > 1:
                    c.head_used = True
            self.mentions[i].sort()

    def table_rows(self, mi: int, content: str, kind: str) -> list[list[str]]:
        lines = [ln.strip() for ln in content.split("\n") if ln.strip().startswith("|")]
        if not lines:
            return []
        rows = [[c.strip() for c in ln.strip("|").split("|")] for ln in lines]
        rows = [r for r in rows if not all(re.fullmatch(r":?-+:?", c or "-") for c in r)]
        if not rows:
            return []
        head = rows[0]
        is_campaign = head and head[0].lower() in {"campaign", "campaigns", "campaign name"}
        if kind == "campaign":
            return rows[1:] if is_campaign else []
        return rows

    def find_campaign(self, text: str) -> str | None:
        """The first campaign named in `text` (any alias), as its key."""
        if self.mention_rx is None:
            return None
        m = self.mention_rx.search(fold(text))
        return self.alias_to.get(normalize_name(m.group(1))) if m else None

    def campaign_at(self, ui: int, pos: int) -> str | None:
        """The campaign a value at `pos` in unit `ui` belongs to: the nearest mention before
        it in the same line, else after it in the same sentence, else the line's heading."""
        u = self.units[ui]
        best: tuple[int, str] | None = None
        for s, _e, key in self.mentions[ui]:
            if s <= pos:
                best = (s, key)
        if best:
            return best[1]
        after = [k for s, _e, k in self.mentions[ui] if s > pos]
        if after:  # "Conversion rate on estate planning is 3.4%"
            return after[0]
        for j in range(ui - 1, -1, -1):  # earlier sentences of the same line
            v = self.units[j]
            if v.msg != u.msg or v.line != u.line:
                break
            if self.mentions[j]:
                return self.mentions[j][-1][2]
        # bullet lines under a heading "X, first three weeks:"
        j = self.heading[ui]
        if _BULLET.match(u.line_text) and j >= 0:
            v = self.units[j]
            if v.line_text.rstrip().endswith(":"):
                if self.mentions[j]:
                    return self.mentions[j][-1][2]
                if u.role == "assistant":  # "It worked. Four weeks on tCPA:"
                    return self.context_campaign(u.msg, user_only=True)
        # an answer about the one campaign the user just asked about
        if u.role == "assistant" and not any(
            self.mentions[j] for j in self.msg_units[u.msg] if j < ui
        ):
            return self.context_campaign(u.msg, user_only=True)
        return None

    def segment_for(self, ui: int, key: str) -> str:
        """The part of a sentence about one campaign, when it names several: from the end of
        the previous other campaign's mention to the start of the next one."""
        text = self.units[ui].text
        ms = self.mentions[ui]
        if len({k for _s, _e, k in ms}) <= 1:
            return text
        start, end = 0, len(text)
        mine = [s_ for s_, _e, k in ms if k == key]
        if not mine:
            return text
        first = mine[0]
        for s_, e_, k in ms:
            if k != key and e_ <= first:
                start = max(start, e_)
            if k != key and s_ > first:
                end = min(end, s_)
        return text[start:end]

    def campaign_context(self, c: _Campaign) -> list[int]:
        """The sentences about a campaign: those naming it, the next sentence when it names no
        campaign ("Budget stays at $60/day."), and the start of a reply that names none when
        the user's question named only this one ("sandals pmax?" -> "- ROAS 1.6x ...")."""
        key = normalize_name(c.name)
        out: list[int] = []
        for i in c.units:
            if i not in out:
                out.append(i)
            u = self.units[i]
            for j in (i - 1, i + 1):
                if not 0 <= j < len(self.units) or j in out or self.mentions[j]:
                    continue
                v = self.units[j]
                if v.msg != u.msg:
                    continue
                if _BULLET.match(u.line_text) and v.line != u.line:
                    continue  # a neighbouring bullet is about something else
                if j < i and not re.search(r"\$[\d,.]+\s?(?:/\s?day|a day|per day)", v.text):
                    continue
                out.append(j)
        for mi, units in self.msg_units.items():
            if self.messages[mi].role != "user" or mi + 1 not in self.msg_units:
                continue
            keys = {k for i in units for _s, _e, k in self.mentions[i]}
            reply = self.msg_units[mi + 1]
            if keys == {key} and not any(self.mentions[i] for i in reply):
                out.extend(i for i in reply[:3] if i not in out)
        return sorted(out)

    def emit_campaigns(self) -> None:
        for c in self.campaigns.values():
            if not c.units:
                continue
            meta: dict[str, Any] = {}
            extended = self.campaign_context(c)
            lines = [self.units[i] for i in extended]
            for i in extended:
                t = self.segment_for(i, normalize_name(c.name))
                hypo = bool(_HYPOTHETICAL.search(t)) and not re.search(
                    r"^(?:done|paused|switched|raised|launched|set|resumed)", t, re.I
                )
                if hypo:
                    continue
                strat = list(_STRATEGY_RE.finditer(t))
                if strat:
                    s = strat[-1]
                    label = _STRATEGY_NAMES.get(
                        re.sub(r"maximi[sz]e|maximuze", "maximize", s.group("s").lower()),
                        s.group("s"),
                    )
                    meta["strategy"] = f"{label} {s.group('v')}".strip() if s.group("v") else label
                budgets = re.findall(
                    r"\$\s?(" + _NUM + r")\s?(?:/\s?day|a day|per day)", t, re.IGNORECASE
                )
                if budgets:
                    meta["budget"] = float(budgets[-1].replace(",", ""))
                status = _status_of(t)
                if status:
                    meta["status"] = status
            changed = any(
                re.search(
                    r"^(?:done[:,]?\s*)?(?:paused|resumed|launched|switched|raised|lowered|set|"
                    r"moved|restarted|capped)\b|\bis now\b|\bnow (?:on|bids)\b",
                    self.units[i].text,
                    re.I,
                )
                for i in c.units
                if self.units[i].role == "assistant"
            )
            if changed:
                importance = 0.9
            elif c.user_mentioned or len(c.units) >= 2:
                importance = 0.7
            else:
                importance = 0.45
            acc = self.acc("campaign", c.name, importance, meta)
            facts = []
            if "strategy" in meta:
                facts.append(f"strategy {meta['strategy']}")
            if "budget" in meta:
                facts.append(f"budget ${meta['budget']:g}/day")
            if "status" in meta:
                facts.append(f"status {meta['status']}")
            acc.head = f"{c.name}: {', '.join(facts)}." if facts else f"{c.name}."
            for u in lines[:10]:
                acc.add_line(u.text)
            for i in c.units:
                for s, e, key in self.mentions[i]:
                    if key == normalize_name(c.name) or self.campaigns.get(key) is c:
                        acc.add_alias(self.units[i].text[s:e])

    # -- metrics --

    def find_metrics(self) -> None:
        last_bullet_kpi: dict[int, tuple[int, str]] = {}  # message -> (unit, KPI label)
        for ui, u in enumerate(self.units):
            if u.line_text.lstrip().startswith("|"):
                continue
            labels = self.metrics_in(ui, u.text)
            if labels and _BULLET.match(u.line_text):
                last_bullet_kpi[u.msg] = (ui, labels[-1])
            elif not labels and u.role == "assistant":
                prev = last_bullet_kpi.get(u.msg)
                if not self.answered_metric(ui) and prev and _BULLET.match(u.line_text):
                    self.sibling_metric(ui, prev[1])
        for mi, m in enumerate(self.messages):
            self.metrics_in_table(mi, m.content)

    def sibling_metric(self, ui: int, label: str) -> None:
        """A bullet that names a campaign and a value but no KPI, under a bullet that did:
        "- Sandals PMax: ROAS 1.6x" / "- Standard Shopping is at 340% (3.4x)"."""
        if not self.mentions[ui]:
            return
        kinds = next((k for rx, lab, k in _KPI_RES if lab == label), ())
        if not kinds and label.startswith("cost per"):
            kinds = ("money",)
        for v in _values(self.units[ui].text):
            if v.kind in kinds and not re.search(r"/|\b(?:a|per) (?:day|week|month)", v.text):
                camp = self.campaign_at(ui, v.start)
                if camp:
                    self.add_metric(ui, label, camp, [v], self.units[ui].text)
                return

    def answered_metric(self, ui: int) -> bool:
        """A reply that gives a value without naming the KPI the user just asked about:
        "Match rate?" -> "92% for the last two weeks"; "demo-to-SQL by campaign?" -> bullets."""
        u = self.units[ui]
        first = self.msg_units[u.msg][0]
        is_bullet = bool(re.match(r"^\s*(?:[-*•]|\d+[.)])", u.line_text))
        if ui != first and not is_bullet:
            return False
        um = self.prev_role_msg(u.msg, "user")
        if um < 0 or um != u.msg - 1:
            return False
        asked: list[tuple[str, tuple[str, ...]]] = []
        question = self.messages[um].content
        for rx, label, kinds in _KPI_RES:
            for km in rx.finditer(question):
                lab = _format_label(label, km) if label else ""
                if lab and all(lab != a for a, _k in asked):
                    asked.append((lab, kinds))
        if len(asked) != 1 or _values(question):
            return False
        label, kinds = asked[0]
        for v in _values(u.text):
            if v.kind in kinds and not re.search(r"/|\b(?:a|per) (?:day|week|month)", v.text):
                camp = self.campaign_at(ui, v.start)
                self.add_metric(ui, label, camp, [v], u.text)
                return True
        return False

    def metrics_in(self, ui: int, text: str) -> list[str]:
        """KPI values in one sentence; returns the KPI labels found."""
        vals = _values(text)
        if not vals:
            return []
        used: set[int] = set()
        hits: list[tuple[str, int, list[_Value]]] = []
        # "$68 per lead", "52 bucks per sale", "$0.90 a click"
        for vi, v in enumerate(vals):
            if v.kind != "money":
                continue
            pm = _PER_NOUN_RE.match(text, v.end)
            if pm and not _NOT_METRIC_AFTER.match(text, v.end):
                hits.append((_kpi_label(pm.group("noun")), v.start, [v]))
                used.add(vi)
            elif re.match(r"\s*each\b", text[v.end :], re.I):
                before = text[max(0, v.start - 80) : v.start]
                nm = list(re.finditer(r"\b(" + _COUNT_NOUNS + r")\b", before, re.I))
                if nm:
                    hits.append((_kpi_label(nm[-1].group(1)), v.start, [v]))
                    used.add(vi)
        # KPI words next to a value
        taken: list[tuple[int, int]] = []
        for rx, label, kinds in _KPI_RES:
            for km in rx.finditer(text):
                if any(s <= km.start() < e for s, e in taken):
                    continue
                taken.append((km.start(), km.end()))
                if not label:
                    continue
                lab = _format_label(label, km)
                if not lab:
                    continue
                chain = self.value_chain(text, km.start(), km.end(), vals, used, kinds)
                if chain:
                    hits.append((lab, km.start(), chain))
        # "34 conversions", "41 leads" (counts; only conversions become metrics of their own)
        for vi, v in enumerate(vals):
            if v.kind != "num" or vi in used:
                continue
            nm = re.match(r"\s+(?:tracked |total |more )?(" + _COUNT_NOUNS + r")\b", text[v.end :])
            if nm and nm.group(1).lower() == "conversions" and self.campaign_at(ui, v.start):
                hits.append(("conversions", v.start, [v]))
        for label, pos, chain in hits:
            camp = self.campaign_at(ui, pos)
            self.add_metric(ui, label, camp, chain, text)
        return [label for label, _pos, _chain in hits]

    def value_chain(
        self,
        text: str,
        kstart: int,
        kend: int,
        vals: list[_Value],
        used: set[int],
        kinds: tuple[str, ...],
    ) -> list[_Value]:
        chain: list[_Value] = []
        # value right before the KPI: "310% ROAS", "$1,768 spent"
        for vi, v in enumerate(vals):
            if (
                v.end <= kstart
                and kstart - v.end <= 3
                and v.kind in kinds
                and vi not in used
                and re.fullmatch(r"[\s:]*(?:in\s)?", text[v.end : kstart])
            ):
                used.add(vi)
                return [v]
        pos = kend
        for vi, v in enumerate(vals):
            if v.start < pos:
                continue
            gap = text[pos : v.start]
            limit = 45 if not chain else 25
            if len(gap) > limit or re.search(r"[.;!?|]|\band\b|\bbut\b", gap):
                break
            if any(rx.search(gap) for rx, lab, _k in _KPI_RES if lab):
                break
            plain_roas = (
                "roas_num" in kinds
                and v.kind == "num"
                and "." in v.text
                and v.value is not None
                and v.value <= 30
            )
            if (v.kind not in kinds and not plain_roas) or re.search(
                r"/|\b(?:a|per) (?:day|week|month)", v.text
            ):
                if chain:
                    break
                continue
            if _NOT_METRIC_AFTER.match(text, v.end) and v.kind == "money":
                break
            chain.append(v)
            used.add(vi)
            pos = v.end
            if len(chain) >= 3:
                break
        return chain

    def add_metric(
        self, ui: int, label: str, camp: str | None, chain: list[_Value], text: str
    ) -> None:
        current = None
        for v in chain:
            before = text[max(0, v.start - 25) : v.start]
            if not _PREV_MARK.search(before):
                current = v
                break
        current = current or chain[-1]
        cname = self.campaigns[camp].name if camp else None
        name = self.metric_name(camp, label)
        u = self.units[ui]
        meta: dict[str, Any] = {
            "kpi": label,
            "value": current.value,
            "unit": _UNIT_OF[current.kind],
        }
        if cname:
            meta["campaign"] = cname
        primary = label in {"CPA", "ROAS"} or label.startswith("cost per")
        changed = len(chain) > 1 or bool(
            re.search(r"\b(?:down|up|from|was|dropped|rose|fell|improved)\b", fold(text))
        )
        about_users_campaign = bool(camp and self.campaigns[camp].user_mentioned)
        if u.role == "user" or self.user_cares(label, current):
            importance = 0.9  # a critical metric: the user brought it up or reacted to it
        elif primary and (changed or about_users_campaign):
            importance = 0.9  # the efficiency KPI of a campaign under discussion, or its trend
        elif primary or label in {"CTR", "avg CPC", "conversion rate"} or "rate" in label:
            importance = 0.7  # context
        elif label in {"conversions", "sales", "orders", "bookings"}:
            importance = 0.45  # background
        else:
            importance = 0.6
        acc = self.acc("metric", name, importance, meta)
        acc.metadata.update(meta)
        acc.head = f"{name}: {current.text}."
        acc.add_line(u.text)

    def user_cares(self, label: str, value: _Value) -> bool:
        """The user named this KPI or repeated its value somewhere in the session."""
        said = " ".join(fold(m.content) for m in self.messages if m.role == "user")
        if re.search(r"(?<![\w-])" + re.escape(fold(label)) + r"(?![\w-])", said):
            return True
        if value.value is not None and value.value >= 1:
            num = f"{value.value:g}"
            return bool(re.search(r"(?<![\d.,$])\$?" + re.escape(num) + r"(?![\d,]|\.\d)", said))
        return False

    def metric_name(self, camp: str | None, label: str) -> str:
        """ "<campaign short name> <KPI>", or a stored metric's name for the same campaign and
        KPI under another form of the campaign's name ("Trail Runners Search CPA")."""
        if not camp:
            return label[:1].upper() + label[1:]
        c = self.campaigns[camp]
        name = f"{self.short(c.name)} {label}"
        kpi = set(tokenize(label))
        forms = [set(tokenize(a)) | kpi for a in [c.name, *c.aliases]]
        for k in self.known:
            if k.type != "metric":
                continue
            for n in (k.name, *k.aliases):
                theirs = set(tokenize(n)) - _METRIC_FILLER
                if theirs and any(theirs == f - _METRIC_FILLER for f in forms):
                    return k.name
        return name

    def metrics_in_table(self, mi: int, content: str) -> None:
        rows = self.table_rows(mi, content, "any")
        if len(rows) < 2:
            return
        head = rows[0]
        first_ui = next((i for i, u in enumerate(self.units) if u.msg == mi), None)
        if first_ui is None:
            return
        is_campaign = head[0].lower() in {"campaign", "campaigns", "campaign name"}
        for row in rows[1:]:
            if not row:
                continue
            line = " | ".join(row)
            if is_campaign:
                key = normalize_name(_clean_name(row[0]))
                camp = next(
                    (k for k, c in self.campaigns.items() if key in map(normalize_name, c.aliases)),
                    None,
                )
                for col, cell in zip(head[1:], row[1:], strict=False):
                    label = self.table_label(col)
                    vals = _values(cell)
                    if label and vals:
                        self.add_metric_table(mi, label, camp, vals, f"{row[0]} {col}: {cell}")
            else:
                label_cell = row[0]
                label = self.table_label(re.sub(r"\(.*?\)", "", label_cell))
                if not label:
                    continue
                camp = self.find_campaign(label_cell)
                if camp is None:
                    camp = self.context_campaign(mi)
                vals = [v for cell in row[1:] for v in _values(cell)]
                if vals:
                    cols = ", ".join(f"{h}: {c}" for h, c in zip(head[1:], row[1:], strict=False))
                    self.add_metric_table(mi, label, camp, vals[::-1], f"{label_cell}: {cols}")
            del line

    def table_label(self, col: str) -> str | None:
        for rx, label, _kinds in _KPI_RES:
            m = rx.search(col)
            if m and label:
                return _format_label(label, m)
        return None

    def add_metric_table(
        self, mi: int, label: str, camp: str | None, vals: list[_Value], text: str
    ) -> None:
        v = vals[0]
        cname = self.campaigns[camp].name if camp else None
        name = self.metric_name(camp, label)
        meta: dict[str, Any] = {"kpi": label, "value": v.value, "unit": _UNIT_OF[v.kind]}
        if cname:
            meta["campaign"] = cname
        primary = label in {"CPA", "ROAS"} or label.startswith("cost per") or "rate" in label
        acc = self.acc("metric", name, 0.85 if primary else 0.6, meta)
        acc.metadata.update(meta)
        acc.head = f"{name}: {v.text}."
        acc.add_line(text)

    def context_campaign(self, mi: int, user_only: bool = False) -> str | None:
        """The one campaign the previous message (or this one's first line) is about."""
        for j in (mi - 1,) if user_only else (mi - 1, mi):
            if user_only and (j < 0 or self.messages[j].role != "user"):
                continue
            keys = {k for i in self.msg_units.get(j, ()) for _s, _e, k in self.mentions[i]}
            if len(keys) == 1:
                return next(iter(keys))
        return None

    # -- decisions --

    def find_decisions(self) -> None:
        n = len(self.units)
        for ui in range(n):
            u = self.units[ui]
            if u.role == "assistant":
                self.assistant_action(ui)
            elif u.role == "user":
                self.user_decision(ui)

    def message_text(self, mi: int) -> str:
        if not 0 <= mi < len(self.messages):
            return ""
        if mi not in self._text_cache:
            self._text_cache[mi] = " ".join(self.messages[mi].content.split())
        return self._text_cache[mi]

    def near(self, mi: int) -> str:
        """The start of a message, for looking up context words: bounded, so that a huge
        message does not make every decision rescan it."""
        return self.message_text(mi)[:1500]

    def prev_role_msg(self, mi: int, role: str) -> int:
        for j in range(mi - 1, -1, -1):
            if self.messages[j].role == role:
                return j
        return -1

    def last_campaign_before(self, ui: int) -> str | None:
        for j in range(ui, -1, -1):
            if self.mentions[j]:
                return self.mentions[j][-1][2]
            if ui - j > 12:
                break
        return None

    def assistant_action(self, ui: int) -> None:
        u = self.units[ui]
        t = re.sub(r"^\s*(?:[-*•]\s*|\d+[.)]\s*)", "", u.text)
        under_done = False
        if _BULLET.match(u.line_text) and self.heading[ui] >= 0:
            v = self.units[self.heading[ui]]
            under_done = bool(re.match(r"^(?:done|set up|changes made)\b", v.text, re.I))
            if re.search(
                r"\b(?:options?|could|would|suggest|propos\w+|plan|ideas?)\b|\?\s*$",
                v.line_text,
                re.I,
            ):
                return  # a list of options, not things done
        parts = re.split(
            r",?\s+and\s+(?=(?:added|paused|switched|raised|lowered|set|launched|removed|excluded|"
            r"created|moved|blocked|updated|capped|resumed)\b)",
            t,
        )
        if len(parts) > 1 and _ACTION_START.match(parts[0]):
            for part in parts:
                self.action_text(ui, part, under_done)
            return
        self.action_text(ui, t, under_done)

    def action_text(self, ui: int, t: str, under_done: bool) -> None:
        u = self.units[ui]
        m = re.match(
            r"^(?:(?:done|ok|okay|sure|great|deal|yes)[:.,!]?\s*)?(?:i'?ve |we'?ve |i |we )?"
            r"(?P<verb>paused|resumed|restarted|re-?enabled|enabled|launched|switched|moved|raised|"
            r"increased|bumped|lowered|reduced|decreased|dropped|cut|set up|set|added|excluded|"
            r"blocked|removed|capped|created|turned (?:it )?(?:back )?(?:on|off)|tightened|"
            r"loosened|shifted|applied|implemented|installed|enabled)\b(?P<rest>.*)",
            t,
            re.IGNORECASE,
        )
        rest = ""
        verb = ""
        if re.fullmatch(r"(?:all )?done[.!]?", t.strip(), re.I):
            um = self.prev_role_msg(u.msg, "user")
            if um >= 0 and _is_agreement(self.message_text(um)):
                return  # "do it" -> "Done.": the agreed proposal becomes the decision
            nxt = ui + 1
            if nxt < len(self.units) and self.units[nxt].msg == u.msg:
                nt = self.units[nxt].text
                if not _ACTION_START.match(nt):
                    self.make_decision(nxt, "done", nt, nt, executed=True)
            return
        restated = re.search(
            r"\b(?:has been|had been|was|were|we|i|you) paused\b|\bkeep [\w -]{2,40} paused\b",
            t,
            re.I,
        )
        if restated and not m:
            self.make_decision(ui, "paused", t, t, executed=True, importance=0.5)
            return
        if m:
            verb, rest = m.group("verb").lower(), m.group("rest")
        elif re.match(r"^(?:done|set up)[:,]\s*\S", t, re.I) and not re.match(
            r"^done[:,]\s*(?:[-*•]|$)", t, re.I
        ):
            verb, rest = "done", re.sub(r"^(?:done|set up)[:,]\s*", "", t, flags=re.I)
        elif under_done or re.search(r"\b(?:is now|now on|now bids|stays on|is paused)\b", t):
            verb, rest = "done", t
        if not verb:
            return
        if re.search(
            r"\b(?:report|check-?ins?|updates?|bullet|cc'?d|plain english)\b", rest, re.I
        ) and not re.search(r"\$|campaign|bid|budget|negative", rest, re.I):
            return  # acknowledging a preference, not an account change
        self.make_decision(ui, verb, rest, t, executed=True)

    def user_decision(self, ui: int) -> None:
        u = self.units[ui]
        t = u.text
        low = fold(t)
        m = re.search(
            r"(?:^|[.,;!]\s*|\b(?:and|then|so|but)\s+)(?:(?:ok|okay|yes|yeah|fine|alright|sure)"
            r"[,.!]?\s*)?(?:let'?s|we'?ll|we will|we should|go ahead and|please|pls|can you|"
            r"can we|just)?\s*(?P<verb>pause|resume|restart|launch|switch|move|raise|increase|"
            r"lower|reduce|cut|add|exclude|block|cap|turn (?:it |that )?(?:back )?(?:on|off)|"
            r"drop|shift|put)\b(?P<rest>.*)",
            low,
        )
        if (
            m
            and not re.search(r"\?\s*$", t)
            and not re.search(r"\b(?:don'?t|not|never)\b", low[: m.start("verb")])
        ):
            if not self.reply_reports_action(u.msg):
                self.make_decision(ui, m.group("verb"), t[m.start("rest") :], t, executed=False)
            return
        d = re.search(
            r"\b(?:don'?t|do not) (?:touch|change|pause|do) (?:anything|it|that|them)?\s*(?:yet|"
            r"for now|until [\w ]+)|\bwait (?:\d+|two|three|four|a few|a couple(?: of)?) "
            r"(?:days|weeks|months)\b|\bhold off\b|\bleave it (?:off|on|as is|alone)(?: for now)?"
            r"|\bkeep (?:it|them|\w+) (?:paused|off|going|running|as is)\b",
            low,
        )
        if d:
            phrase = t[d.start() : d.end()]
            last = self.last_campaign_before(ui)
            if last and re.search(r"\b(?:it|them)\b", phrase):
                phrase = re.sub(r"\b(?:it|them)\b", self.campaigns[last].name, phrase, count=1)
            name = phrase[:1].upper() + phrase[1:]
            acc = self.acc(
                "decision",
                name,
                0.7,
                {
                    "action": phrase,
                    "rationale": "",
                    "affectedEntities": self.affected(ui, t)
                    or ([self.campaigns[last].name] if last else []),
                    "reversible": True,
                },
            )
            acc.add_line(t)
            self.add_context(acc, u.msg)
            return
        first = self.msg_units[u.msg][0]
        if ui == first and _is_agreement(t) and "?" not in self.messages[u.msg].content:
            self.agreement(ui)

    def reply_reports_action(self, mi: int) -> bool:
        """The agent's next message says what it changed (not just "Done.")."""
        nxt = mi + 1
        if nxt < len(self.messages) and self.messages[nxt].role == "assistant":
            return any(
                _ACTION_START.match(v.text) or re.match(r"^done[:,]\s*\w", v.text, re.I)
                for v in self.units
                if v.msg == nxt
            )
        return False

    def agreement(self, ui: int) -> None:
        u = self.units[ui]
        if self.reply_reports_action(u.msg):
            return  # the reply reports the action; it becomes the decision
        before = len(self.out)
        prev = self.prev_role_msg(u.msg, "assistant")
        if prev < 0:
            return
        for j in reversed(self.msg_units.get(prev, [])):  # the proposal nearest to the "yes"
            v = self.units[j]
            pm = re.search(
                r"\b(?:i'?d|i would|i suggest(?: we)?|i recommend|we could|let'?s|"
                r"my suggestion is to)\s+(?P<rest>.+)",
                v.text,
                re.I,
            )
            if pm:
                rest = pm.group("rest")
                vm = re.match(r"(?P<verb>\w+)\b(?P<rest>.*)", rest)
                if vm:
                    self.make_decision(j, vm.group("verb").lower(), vm.group("rest"), v.text, True)
                    reply = u.msg + 1
                    if len(self.out) > before and reply < len(self.messages):
                        acc = list(self.out.values())[-1]
                        if self.messages[reply].role == "assistant":
                            acc.add_line(f"Done: {self.message_text(reply)[:300]}")
                return

    def affected(self, ui: int, text: str) -> list[str]:
        """Campaigns named in `text` (a sentence, or part of one, of unit `ui`)."""
        keys = [k for _s, _e, k in self.mentions[ui]]
        if text.strip() != self.units[ui].text.strip() and self.mention_rx is not None:
            keys = [
                k
                for m in self.mention_rx.finditer(fold(text))
                if (k := self.alias_to.get(normalize_name(m.group(1))))
            ]
        names = []
        for k in keys:
            nm = self.campaigns[k].name
            if nm not in names:
                names.append(nm)
        return names[:10]

    def make_decision(
        self,
        ui: int,
        verb: str,
        rest: str,
        sentence: str,
        executed: bool,
        importance: float | None = None,
    ) -> None:
        u = self.units[ui]
        rest = re.sub(r"^[\s:,-]+", "", rest)
        low_rest = fold(rest)
        camps = self.affected(ui, sentence)
        if re.match(r"(?:it|that|this one|them)\b", low_rest):
            # the pronoun refers back: a campaign named before it, not later in the sentence
            pos = fold(sentence).find(low_rest[:20])
            before = [k for s_, _e, k in self.mentions[ui] if 0 <= s_ < pos]
            last = before[-1] if before else self.last_campaign_before(ui - 1) if ui else None
            if last:
                name_ = self.campaigns[last].name
                camps = [name_] + [c for c in camps if c != name_]
        camp = camps[0] if camps else None
        v = verb.split()[0]
        canon = {
            "paused": "Pause", "pause": "Pause", "resumed": "Resume", "resume": "Resume",
            "restarted": "Resume", "restart": "Resume", "re-enabled": "Resume",
            "reenabled": "Resume", "enabled": "Resume", "launched": "Launch", "launch": "Launch",
            "created": "Launch", "switched": "Switch", "switch": "Switch", "moved": "Switch",
            "move": "Switch", "raised": "Raise", "raise": "Raise", "increased": "Raise",
            "increase": "Raise", "bumped": "Raise", "lowered": "Lower", "lower": "Lower",
            "reduced": "Lower", "reduce": "Lower", "decreased": "Lower", "dropped": "Lower",
            "drop": "Lower", "cut": "Lower", "tightened": "Lower", "loosened": "Raise",
            "set": "Set", "added": "Add", "add": "Add", "excluded": "Add", "exclude": "Add",
            "blocked": "Add", "block": "Add", "capped": "Cap", "cap": "Cap", "shifted": "Shift",
            "shift": "Shift", "turn": "Turn", "turned": "Turn", "put": "Set", "keep": "Keep",
        }.get(v, "")  # fmt: skip
        if verb.startswith("turn"):
            canon = "Pause" if verb.endswith("off") else "Resume"
        name = ""
        strat = list(_STRATEGY_RE.finditer(rest))
        budget = re.findall(r"\$\s?(" + _NUM + r")\s?(?:/\s?day|a day|per day)", rest, re.I)
        if not budget:
            budget = re.findall(r"\b(" + _NUM + r")\s?(?:/\s?day|a day|per day)", rest, re.I)
        if re.search(r"\bnegatives?\b|negative keywords?|\bas (?:a )?negative", rest, re.I) or (
            canon == "Add"
            and (
                re.search(r"'[^']+'", rest)
                or re.search(r"\bnegative|\bblock(?:ed)?\b", self.near(u.msg), re.I)
            )
        ):
            name = "Negative keywords"
        elif canon in {"Pause", "Resume", "Launch"} and camp:
            name = f"{canon} {camp}"
        elif strat and camp and re.search(r"\b(?:stays?|remains?|keep|kept)\b", sentence, re.I):
            name = f"Keep {camp} on {_strategy_label(strat[-1])}"
        elif (
            strat
            and camp
            and _strategy_label(strat[-1]) in {"Target CPA", "Target ROAS"}
            and strat[-1].group("v")
            and not re.search(r"\bfrom\b[^.]*\bto\b", sentence, re.I)
            and re.search(
                r"\b(?:is now|now at|target (?:is|at)|tighten|lower|raise|loosen)\b|\bto \$",
                sentence,
                re.I,
            )
        ):
            label = _strategy_label(strat[-1])
            tgt = "tCPA" if label == "Target CPA" else "tROAS"
            around = fold(
                " ".join([sentence] + [self.near(j) for j in range(u.msg - 3, u.msg + 1)])
            )
            if re.search(r"\b(?:tighten|lower|reduce|drop|decrease|cut)\w*", around):
                canon = "Lower"
            elif re.search(r"\b(?:loosen|raise|increase)\w*", around):
                canon = "Raise"
            else:
                canon = "Set"
            name = f"{canon} {self.short(camp)} {tgt} to {strat[-1].group('v')}"
        elif strat and camp and canon in {"Switch", "Set", "Lower", "Raise", ""}:
            s = strat[-1]
            label = _STRATEGY_NAMES.get(
                re.sub(r"maximi[sz]e", "maximize", s.group("s").lower()), s.group("s")
            )
            val = f" {s.group('v')}" if s.group("v") else ""
            if canon in {"Lower", "Raise"} or (canon == "Set" and val and "Target" in label):
                tgt = (
                    "tCPA"
                    if label == "Target CPA"
                    else "tROAS"
                    if label == "Target ROAS"
                    else label
                )
                name = f"{canon or 'Set'} {self.short(camp)} {tgt} to{val}"
            else:
                name = f"Switch {self.short(camp)} to {label}{val}"
                around = fold(
                    " ".join([sentence] + [self.near(j) for j in range(u.msg - 2, u.msg + 1)])
                )
                if re.search(
                    r"\b(?:a test|as a test|test idea|experiment|trial run|we judge it)\b", around
                ):
                    name = f"Test {label} on {self.short(camp)}"
        elif budget and canon in {"Raise", "Lower", "Set", "Cap", "Shift", "Keep", ""}:
            amount = budget[-1]
            if not camp and not re.search(r"\b(?:account|total|whole)\b", sentence, re.I):
                last = self.last_campaign_before(ui)
                camp = self.campaigns[last].name if last else None
                camps = [camp] if camp else camps
            target = f"{self.short(camp)} budget" if camp else "budget"
            if canon == "Cap" or (
                not camp and re.search(r"\b(?:account|total|whole)\b", sentence, re.I)
            ):
                name = f"Cap account spend at ${amount}/day"
            else:
                if canon in {"Set", ""} and camp:
                    prior = self.prior_budget(ui, camp, amount)
                    new = _parse_number(amount) or 0.0
                    around = fold(" ".join(self.near(j) for j in range(u.msg - 2, u.msg + 1)))
                    up = re.search(r"\b(?:raise|increase|bump|more budget|double)\w*", around)
                    down = re.search(r"\b(?:lower|reduce|drop|decrease|cut|trim)\w*", around)
                    if prior is not None:
                        canon = "Raise" if new > prior else "Lower"
                    elif bool(up) != bool(down):
                        canon = "Raise" if up else "Lower"
                prep = "at" if canon == "Keep" else "to"
                name = f"{canon or 'Set'} {target} {prep} ${amount}/day"
        elif canon == "Pause" and not camp:
            return
        if (
            strat
            and budget
            and camp
            and name.startswith("Switch")
            and not re.search(r"\b(?:stays?|remains?|keep|kept)\b[^.]*\$", sentence, re.I)
        ):
            self.make_decision(ui, "set", f"budget to ${budget[-1]}/day", sentence, executed)
        if not name:
            if not executed and not canon:
                return
            phrase = re.split(r"[.;:!?]|\s(?:because|since|so that|so|as)\s", rest.strip())[0]
            words = phrase.split()[:7]
            if not words:
                return
            lead = "" if verb == "done" else verb.capitalize()
            if camp and words and words[0].lower() in {"it", "that", "them"}:
                words[0] = self.short(camp)
            name = f"{lead} {' '.join(words)}".strip(" ,-")
            if len(name) < 4:
                return
        rationale = ""
        rm = re.search(r"\b(?:because|since|so that|due to)\b\s+(.*)", sentence, re.I)
        if rm:
            rationale = rm.group(1)
        if not rationale and u.role == "assistant":
            um = self.prev_role_msg(u.msg, "user")
            rm = re.search(
                r"\b(?:because|since|cause|i'?d rather|so that)\b\s+([^.!?]*)",
                self.near(um),
                re.I,
            )
            if rm:
                rationale = rm.group(0)
        # "Logged why: ...", "Rationale logged: ..."
        for j in range(ui + 1, min(ui + 4, len(self.units))):
            w = self.units[j]
            if w.msg != u.msg:
                break
            lm = re.match(
                r"^(?:logged why|rationale logged|logged|reason|why)\s*:\s*(.*)", w.text, re.I
            )
            if lm:
                rationale = "; ".join(x for x in (rationale.strip(" ."), lm.group(1)) if x)
        action = " ".join(sentence.split())[:480]
        meta = {
            "action": action,
            "rationale": rationale[:1900],
            "affectedEntities": camps,
            "reversible": not re.search(
                r"\b(?:delete|deleted|removed permanently|permanent)\b", sentence, re.I
            ),
        }
        if importance is None:
            importance = 0.9 if executed or u.role == "user" else 0.7
        acc = self.acc("decision", name, importance, meta)
        if acc.metadata.get("rationale") and not rationale:
            meta["rationale"] = acc.metadata["rationale"]
        acc.metadata.update(meta)
        acc.add_line(sentence)
        if rationale:
            acc.add_line(f"Rationale: {rationale}")
        self.add_context(acc, u.msg)
        if name == "Negative keywords":
            acc.add_alias("negatives")
            acc.add_alias("negative keywords")

    def prior_budget(self, ui: int, camp: str, amount: str) -> float | None:
        """The campaign's daily budget as stated before this sentence (`from $120 to $180/day`
        in the same sentence counts), if it differs from the new amount."""
        new = _parse_number(amount)
        key = normalize_name(camp)
        for j in range(ui, max(-1, ui - 60), -1):
            text = self.units[j].text
            if j < ui and key not in {k for _s, _e, k in self.mentions[j]}:
                continue
            found = re.findall(
                r"\$\s?(" + _NUM + r")(?:\s?(?:/\s?day|a day|per day)|\s+to\s+\$)", text
            )
            for f in reversed(found):
                v = _parse_number(f)
                if v is not None and v != new:
                    return v
        return None

    def add_context(self, acc: _Acc, mi: int) -> None:
        """The user's words and the agent's proposal around a decision, for its rationale."""
        if self.messages[mi].role == "assistant":
            um = self.prev_role_msg(mi, "user")
            am = self.prev_role_msg(um, "assistant") if um >= 0 else -1
        else:
            um, am = mi, self.prev_role_msg(mi, "assistant")
        if um >= 0:
            acc.add_line(f"User: {self.message_text(um)[:400]}")
            if len(self.message_text(um)) < 40:  # "yes" to a proposal: what led to it
                am = self.prev_role_msg(um, "assistant")
                earlier = self.prev_role_msg(am, "user") if am >= 0 else -1
                if earlier >= 0:
                    acc.add_line(f"User earlier: {self.message_text(earlier)[:300]}")
        if am >= 0 and re.search(
            r"\b(?:i'?d|i would|suggest|recommend|propos\w*|options?|could|should|plan)\b",
            self.near(am),
            re.I,
        ):
            acc.add_line(f"Proposal: {self.message_text(am)[:500]}")

    # -- pain points --

    def find_pain_points(self) -> None:
        by_topic: dict[str, _Acc] = {}  # topic id (or fallback name) -> entity
        last: tuple[int, _Acc] | None = None  # the topic of the previous sentence, per message
        for ui, u in enumerate(self.units):
            low = fold(u.text)
            topic = _pain_topic(low)
            tid = topic[0] if topic else None
            known_name = self.known_pain(low, tid)
            seen = tid in by_topic if tid else False
            if u.role == "user":
                marker = _PAIN_MARK.search(low) or re.search(r"[?!]{2,}|\b[A-Z]{4,}\b", u.text)
                follows = bool(last) and (
                    last[0] == u.msg
                    or (
                        ui == self.msg_units[u.msg][0]
                        and self.prev_role_msg(u.msg, "user") == last[0]
                        and re.search(r"\b(?:this|that|it)\b", low) is not None
                    )
                )
                if marker and not (topic or known_name) and last and follows:
                    self.pain_update(last[1], ui, u, low)  # "... again. third time I'm asking"
                    continue
                resolved = _RESOLVED.search(low)
                self_complaint = bool(tid and tid in _SELF_COMPLAINING)
                if not (
                    marker or self_complaint or ((resolved or seen) and (topic or known_name))
                ) and not (known_name and tid):
                    continue
                if not (topic or known_name):
                    fb = _fallback_pain_name(u.text) if marker else None
                    camp = self.mentions[ui][0][2] if self.mentions[ui] else None
                    if not fb and marker and camp and _SEVERE.search(low):
                        # "ugh, the Spring Sale one again": a campaign that keeps disappointing
                        fb = f"{self.short(self.campaigns[camp].name)} underperforming"
                    if not fb:
                        continue
                    tid, name = fb, fb
                else:
                    name = known_name or (topic[1] if topic else "")
            else:
                if not (topic or known_name):
                    continue
                name = known_name or (topic[1] if topic else "")
                if not seen and not (known_name and (_RESOLVED.search(low) or _frequency(low))):
                    # the agent alone raising a topic is not a user's pain point yet
                    continue
            key = tid or normalize_name(name)
            acc = by_topic.get(key)
            if acc is None:
                acc = self.acc(
                    "pain_point",
                    name,
                    0.7,
                    {
                        "severity": "medium",
                        "frequency": 1,
                        "resolved": False,
                        "relatedCampaigns": [],
                    },
                )
                by_topic[key] = acc
            self.pain_update(acc, ui, u, low)
            last = (u.msg, acc)
            if topic:
                acc.add_alias(topic[2])
        # the agent's explanation: sentences on the same topic anywhere in the session, and
        # the start of its reply to each complaint
        for key, acc in by_topic.items():
            for mi in sorted(self.complained.get(id(acc), ())):
                for i in self.msg_units.get(mi + 1, [])[:2]:
                    if self.messages[mi + 1].role == "assistant":
                        acc.add_line(self.units[i].text)
            for u in self.units:
                low = fold(u.text)
                t = _pain_topic(low)
                if (t and t[0] == key) or self.known_pain(low, None) == acc.name:
                    acc.add_line(u.text)
            state = "resolved" if acc.metadata["resolved"] else "open"
            acc.head = (
                f"{acc.name} ({state}, severity {acc.metadata['severity']}, "
                f"raised {acc.metadata['frequency']}x)."
            )

    def pain_update(self, acc: _Acc, ui: int, u: _Unit, low: str) -> None:
        meta = acc.metadata
        if u.role == "user":
            self.complained.setdefault(id(acc), set()).add(u.msg)
        if _SEVERE.search(low) or re.search(r"[?!]{2,}|\b[A-Z]{4,}\b", u.text):
            meta["severity"] = "high"
        freq = _frequency(low)
        if freq:
            meta["frequency"] = max(meta["frequency"], freq)
            if freq >= 2:
                meta["severity"] = "high"
        if _RESOLVED.search(low) and not re.search(r"\b(?:not|never|isn'?t|still)\b", low):
            meta["resolved"] = True
        elif u.role == "user" and _PAIN_MARK.search(low):
            meta["resolved"] = False
        for c in self.affected(ui, u.text):
            if c not in meta["relatedCampaigns"]:
                meta["relatedCampaigns"].append(c)
        high = meta["severity"] == "high" or meta["resolved"]
        acc.importance = max(acc.importance, 0.9 if high else 0.7)
        acc.add_line(("User: " if u.role == "user" else "") + u.text)

    def known_pain(self, low: str, tid: str | None) -> str | None:
        """The stored pain point this sentence is about: the same topic, else shared words."""
        pains = [k for k in self.known if k.type == "pain_point"]
        if tid:
            rx = _TOPIC_RES[tid]
            for k in pains:
                if any(rx.search(fold(n)) for n in (k.name, *k.aliases)):
                    return k.name
        terms = set(tokenize(low))
        best, best_n = None, 0
        for k in pains:
            kt: set[str] = set()
            for n in (k.name, *k.aliases):
                kt |= set(tokenize(n))
            kt -= _WEAK_TERMS
            n = len(terms & kt)
            if n > best_n:
                best, best_n = k.name, n
        return best if best_n >= 1 else None

    # -- preferences --

    def find_preferences(self) -> None:
        for ui, u in enumerate(self.units):
            low = fold(u.text)
            done: set[str] = set()
            for category, slot, rx, explicit in _PREFS:
                m = rx.search(low)
                if not m:
                    continue
                if category in done:  # one preference per category and sentence
                    for acc in self.out.values():
                        if (
                            acc.type == "preference"
                            and acc.metadata.get("category") == category
                            and u.text in " ".join(acc.lines)
                        ):
                            acc.add_alias(m.group(0))
                    continue
                if slot is _judge_slot and not m.group(0).startswith("judge"):
                    msg = fold(self.messages[u.msg].content)
                    if rx.search(msg) and re.search(r"judge \w+ (?:on|by)", msg):
                        continue  # the explicit "judge ... on" sentence names it
                nxt = ""
                if ui + 1 < len(self.units) and self.units[ui + 1].msg == u.msg:
                    nxt = self.units[ui + 1].text
                name = slot(m, low, nxt) if callable(slot) else slot
                if not name:
                    continue
                name = self.reuse_pref(name, rx, slot)
                done.add(category)
                if u.role != "user":
                    key = ("preference", normalize_name(name))
                    known_names = {
                        normalize_name(k.name) for k in self.known if k.type == "preference"
                    }
                    if key not in self.out and normalize_name(name) not in known_names:
                        continue
                    importance = 0.45  # the agent restating it: background
                else:
                    importance = 0.9 if explicit or _EXPLICIT_PREF.search(low) else 0.7
                value = " ".join(u.text.split())
                if (
                    u.role == "user"
                    and nxt
                    and not any(r.search(fold(nxt)) for _c, _s, r, _e in _PREFS)
                ):
                    value = f"{value} {nxt}"
                value = value[:480]
                acc = self.acc(
                    "preference",
                    name,
                    importance,
                    {"category": category, "value": value, "confidence": 0.9 if explicit else 0.7},
                )
                if u.role == "user":
                    acc.metadata.update({"category": category, "value": value})
                    acc.metadata["confidence"] = max(
                        acc.metadata["confidence"], 0.9 if explicit else 0.7
                    )
                acc.add_line(("User: " if u.role == "user" else "") + u.text)
                acc.add_alias(m.group(0))
                if u.role == "user":
                    reply = self.first_reply(u.msg)
                    if reply:
                        acc.add_line(reply)
                acc.head = f"{acc.name} ({category}): {acc.metadata['value']}"

    def reuse_pref(self, name: str, rx: re.Pattern[str], slot: Any) -> str:
        """A stored preference for the same slot keeps its name when the value is revised."""
        prefs = [k for k in self.known if k.type == "preference"]
        for k in prefs:
            for n in (k.name, *k.aliases):
                m = rx.search(fold(n))
                if m and (
                    slot is not _cadence_slot
                    or _cadence_slot(m, fold(n), "").split()[-1] == name.split()[-1]
                ):
                    return k.name
        norm_terms = set(tokenize(name)) - _WEAK_TERMS
        for k in prefs:
            kt = set(tokenize(k.name)) - _WEAK_TERMS
            for a in k.aliases:
                kt |= set(tokenize(a)) - _WEAK_TERMS
            if normalize_name(k.name) == normalize_name(name) or (
                norm_terms and len(norm_terms & kt) >= max(1, len(norm_terms) // 2 + 1)
            ):
                return k.name
        return name

    def first_reply(self, mi: int) -> str:
        nxt = mi + 1
        if nxt < len(self.messages) and self.messages[nxt].role == "assistant":
            text = " ".join(self.messages[nxt].content.split())
            return text[:240]
        return ""


_ACTION_START = re.compile(
    r"^(?:[-*•]\s*)?(?:(?:done|ok|okay|sure|great|deal|yes)[:.,!]?\s*)?(?:i'?ve |we'?ve |i |we )?"
    r"(?:paused|resumed|restarted|re-?enabled|launched|switched|moved|raised|increased|bumped|"
    r"lowered|reduced|decreased|dropped|set up|set|added|excluded|blocked|removed|capped|created|"
    r"updated|tightened|loosened|shifted|applied|implemented)\b",
    re.IGNORECASE,
)


def _is_agreement(text: str) -> bool:
    """ "ok do it", "yes", "fine, go", "yes same playbook": a short yes to a proposal."""
    low = fold(text).strip()
    if "?" in low or len(low) > 40:
        return False
    return bool(
        re.match(
            r"^(?:ok|okay|yes|yep|yeah|sure|fine|agreed?|go|go ahead|do it|do both|sounds good|"
            r"makes sense|let'?s do it|perfect|deal|great|please do|do that|agree)\b",
            low,
        )
    )


def _strategy_label(m: re.Match[str]) -> str:
    key = re.sub(r"maxim[iu][sz]e", "maximize", m.group("s").lower())
    return _STRATEGY_NAMES.get(key, m.group("s"))


def _status_of(text: str) -> str | None:
    low = fold(text)
    if re.search(r"\blimited by budget\b", low):
        return "limited by budget"
    if re.search(r"\b(?:paused|pause it)\b", low) and not re.search(
        r"\bturn\w* [\w ]*back on\b", low
    ):
        return "paused"
    if re.search(r"\b(?:resumed|re-?enabled|restarted|turned (?:it )?back on|back on)\b", low):
        return "active"
    if re.search(r"\b(?:launched|went live|is live|now live)\b", low):
        return "active"
    if re.search(r"\b(?:launching|will launch|planned|plan to launch)\b", low):
        return "planned"
    if re.search(r"\blearning\b", low):
        return "learning"
    return None


# --- pain point vocabulary -----------------------------------------------------------------------

_PAIN_MARK = re.compile(
    r"\b(?:ugh|argh|annoy\w*|drives? me (?:nuts|crazy|mad)|bugs? me|bugging|frustrat\w*|sick of|"
    r"tired of|hate|awful|terrible|horrible|garbage|junk|again|keeps? (?:happening|showing|coming|"
    r"getting)|still|(?:second|third|fourth|fifth) time|problem|issue|complain\w*|wrong|waste\w*|"
    r"black box|mess|way too|too (?:much|expensive)|no idea|makes no sense|indefensible|"
    r"furious|ridiculous|unacceptable|insane|absurd|worried|concern\w*|struggl\w*|"
    r"can'?t (?:even )?(?:see|tell|figure)|doesn'?t show|"
    r"disaster|killing (?:me|us)|eating (?:my|our|the) budget|expensive|selling me stuff|"
    r"spent way more|more than i expected)\b"
)
_SEVERE = re.compile(
    r"\b(?:nuts|crazy|furious|garbage|hate|awful|terrible|horrible|indefensible|disaster|"
    r"killing|ridiculous|unacceptable|insane|absurd|again|keeps?|twice|still|"
    r"(?:second|third|fourth|fifth) time|every time|way too|"
    r"sick of|wrong|black box)\b"
)
_RESOLVED = re.compile(
    r"\b(?:fixed|resolved|solved|sorted|closed|cleaned up|clean|finally|no longer|way down|"
    r"(?:numbers?|they) (?:now )?match|matches now|went away|gone)\b"
)
_ORDINALS = {"second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6}


def _frequency(low: str) -> int:
    m = re.search(r"\b(second|third|fourth|fifth|sixth) time\b", low)
    if m:
        return _ORDINALS[m.group(1)]
    if re.search(r"\b(?:again|keeps?|still|every time|twice)\b", low):
        return 2
    return 0


#: Common ads problems: (topic id, regex over folded text, how to name it from the match).
#: The name keeps the user's own words where they are a noun phrase ("junk demos").
_PAIN_TOPIC_DEFS: list[tuple[str, str, Any]] = [
    ("search_terms", r"irrelevant (?:search terms?|traffic|clicks|searches|queries|keywords)|"
     r"search terms?|junk (?:traffic|clicks|searches|queries)|wasted? (?:spend|clicks)",
     "Irrelevant search terms"),
    ("junk_calls", r"(?:junk|spam|sales|robo|solicitor) ?calls?|solicitors?|people selling|"
     r"sales pitch\w*|selling (?:me|us) (?:stuff|[\w ]{0,20}services|google listings)",
     lambda m: "Junk sales calls" if "sales" in m else "Junk calls"),
    ("lead_quality", r"(?:junk|bad|garbage|low[- ]quality|fake|spam|unqualified) (?:leads?|demos?|"
     r"demo requests|enquiries|inquiries|form fills|signups|sign-ups|submissions)|lead quality|"
     r"(?:leads|demos|enquiries) (?:from [\w-]+ )?(?:are|is) (?:garbage|junk)|\bjunk\b|"
     r"leads? (?:never|don'?t|do not|won'?t) (?:answer|pick up|respond|reply|show up)|"
     r"no-?shows?|wrong (?:kind of )?(?:leads|customers|people)",
     lambda m: _quality_name(m)),
    ("double_counting", r"counted twice|double[- ]?count\w*|numbers are (?:all )?wrong|"
     r"(?:way )?more (?:sales|conversions|orders) than|numbers? (?:now )?match|"
     r"(?:doesn'?t|don'?t) match|conversion thing|inflated conversions",
     "Duplicate conversions"),
    ("offline_tracking", r"(?:phone|offline|in-store|store) (?:bookings?|sales|orders|calls|"
     r"conversions|thing)|(?:bookings?|sales|orders|leads)(?: \w+){0,3} (?:over|by) the phone|"
     r"(?:google|it) has no idea",
     lambda m: _tracking_name(m)),
    ("website_calls", r"website calls?|calls? (?:off|from) the website",
     "Website calls not tracked"),
    ("rising_cpc", r"(?:clicks?|cpcs?) (?:are |is )?(?:getting|got) (?:expensive|pricier|more "
     r"expensive)|cpcs? (?:are )?(?:up|rising|spik\w*|climbing)|clicks (?:are )?getting "
     r"(?:pricier|expensive)", "Rising CPCs"),
    ("overspend", r"spent (?:way )?more than|overspen\w*|credit card bill|more than i expected|"
     r"budget (?:blew|blown)", "Overspending"),
    ("black_box", r"(?:(?:pmax|performance max|smart bidding|google) is (?:such )?a )?black box|"
     r"no visibility|can'?t (?:even )?see where", "Lack of visibility"),
    ("price_shoppers", r"price[- ]shoppers?|tire[- ]kickers?|bargain hunters", "Price shoppers"),
    ("brand_bidding", r"bidding on (?:our|my|your) (?:name|brand)|competitors? "
     r"(?:is |are |started )?bidding", "Competitor bidding on brand"),
    ("tracking_broken", r"tracking (?:is |has been |was |seems |got )?(?:broken|not working|wrong|"
     r"down|off)|conversions? (?:stopped|"
     r"dropped to zero)", "Conversion tracking broken"),
    ("disapprovals", r"disapprov\w*|policy violation|suspended", "Disapproved ads"),
    ("high_cpa", r"(?:cpa|cost per \w+) (?:is )?(?:way )?too (?:high|much)|too expensive|feels "
     r"expensive|(?:bucks|dollars|(?<![\d,.$])\$?\d[\d,.]*) (?:per|a|an) \w+ is "
     r"(?:way too much|too much|"
     r"insane|crazy|ridiculous|absurd|too high|steep)|way too much|(?:is|are) (?:insane|steep)",
     "High CPA"),
]  # fmt: skip
#: Topics whose very words are a complaint ("price shoppers"), unlike "search terms".
_SELF_COMPLAINING = {
    "price_shoppers", "black_box", "junk_calls", "lead_quality", "double_counting", "overspend",
    "rising_cpc", "tracking_broken", "disapprovals", "brand_bidding",
}  # fmt: skip
_TOPIC_RES: dict[str, re.Pattern[str]] = {t: re.compile(rx) for t, rx, _n in _PAIN_TOPIC_DEFS}
#: Words whose presence alone does not make two metric names different.
_METRIC_FILLER = {"search", "campaign", "avg", "average", "mean", "overall", "account", "total"}
_WEAK_TERMS = set(
    """not tracked issue problem thing low quality high ads google campaign spend cost calls
    call search term terms conversion conversions report update budget max change changes
    preference style junk""".split()
)


def _quality_name(m: str) -> str:
    noun = re.search(
        r"leads?|demo requests|demos?|enquiries|inquiries|form fills|sign-?ups|"
        r"submissions",
        m,
    )
    n = noun.group(0) if noun else "leads"
    n = n if n.endswith("s") else n + "s"
    adj = re.search(r"junk|garbage|spam|fake|bad|unqualified", m)
    if adj:
        word = {"garbage": "junk"}.get(adj.group(0), adj.group(0))
        return f"{word.capitalize()} {n}"
    return f"Low-quality {n}"


def _tracking_name(m: str) -> str:
    if re.search(r"phone", m):
        what = re.search(r"bookings?|sales|orders|calls", m)
        return f"Phone {what.group(0) if what else 'bookings'} not tracked".replace(
            "booking not", "bookings not"
        )
    what = re.match(r"(offline|in-store|store) (\w+)", m)
    return (
        f"{what.group(0).capitalize()} not tracked" if what else "Offline conversions not tracked"
    )


def _black_box_name(low: str) -> str:
    who = re.search(
        r"(pmax|performance max|smart bidding|google)(?= is (?:such )?a black box)", low
    )
    if who:
        label = {"pmax": "PMax", "performance max": "PMax"}.get(who.group(1), who.group(1).title())
        return f"{label} black box"
    return "Lack of visibility"


def _pain_topic(low: str) -> tuple[str, str, str] | None:
    """(topic id, name, matched words) of the first ads problem the text talks about."""
    for tid, _rx, namer in _PAIN_TOPIC_DEFS:
        m = _TOPIC_RES[tid].search(low)
        if m:
            if tid == "black_box":
                return tid, _black_box_name(low), m.group(0)
            if tid == "high_cpa":  # "375 per application is insane" -> "High cost per application"
                per = re.search(r"(?:per|a|an) (\w+) is\b|(cost per \w+|cpa|cpc|cpl)\b", low)
                noun = (per.group(1) or per.group(2)) if per else ""
                label = _kpi_label(noun) if per and per.group(1) else (noun or "cpa")
                label = {"cpa": "CPA", "cpc": "avg CPC", "cpl": "cost per lead"}.get(label, label)
                return tid, f"High {label}", m.group(0)
            name = namer(m.group(0)) if callable(namer) else namer
            return tid, name, m.group(0)
    return None


def _fallback_pain_name(text: str) -> str | None:
    """ "the GCLID problem", "another CRM mess" -> a short name in the user's words."""
    m = re.search(
        r"\b(?:the|this|that|our|my|another|a|such a) ((?:[A-Za-z0-9-]+ ){0,2}?[A-Za-z0-9-]+) "
        r"(thing|issue|problem|mess)\b",
        text,
        re.IGNORECASE,
    )
    if not m or m.group(1).lower() in {"big", "real", "main", "other", "same", "whole"}:
        return None
    what = m.group(1)
    kind = m.group(2).lower()
    what = what if any(c.isupper() for c in what) else what.lower()
    return f"{what[:1].upper()}{what[1:]} {'issue' if kind == 'thing' else kind}"


# --- preference vocabulary -----------------------------------------------------------------------

_EXPLICIT_PREF = re.compile(
    r"\b(?:i prefer|i'?d prefer|i'?d rather|i want|i need|please|pls|always|never|don'?t ever|"
    r"from now on|going forward|keep it|make sure|i'?m|all i care|i care|no more)\b"
)


def _cadence_slot(m: re.Match[str], low: str, nxt: str) -> str:
    """ "send me a weekly report every Friday" -> "Weekly report"; check-ins and calls keep a
    cadence-free name ("Check-in cadence") since their rhythm is what gets revised."""
    noun = ""
    for text in (m.group(0), low):
        if re.search(r"check[- ]?ins?|\bcalls?\b|meeting|sync", text):
            return "Check-in cadence"
        found = re.search(r"\b(report|update|summary|recap|digest|email)s?\b", text)
        if found:
            noun = found.group(1)
            break
    noun = noun or "report"
    if re.search(r"bi-?weekly|every other|every two weeks|fortnight", low):
        cadence = "Biweekly"
    elif re.search(r"monthly|every month|of (?:the|every) month", low):
        cadence = "Monthly"
    elif re.search(r"daily|every day", low):
        cadence = "Daily"
    elif re.search(r"weekly|every week|(?:mon|tues|wednes|thurs|fri|satur|sun)day", low):
        cadence = "Weekly"
    else:
        return f"{noun.capitalize()} cadence"
    return f"{cadence} {noun}"


def _no_test_slot(m: re.Match[str], low: str, nxt: str) -> str:
    what = m.group("what").strip()
    what = re.sub(r"^(?:the|my|our)\s+", "", what)
    what = re.sub(r"\s+(?:campaign|one)$", "", what)
    if what in {"it", "that", "anything", "them", "budget", "budgets", "yet", "now", "this", "for"}:
        return ""
    if m.group("verb") in {"touch", "change"}:
        return f"Don't touch {what.title()}"
    return f"Don't experiment on {what.title()}"


def _placement_slot(m: re.Match[str], low: str, nxt: str) -> str:
    what = m.group("what").strip(".")
    if what in {"it", "that", "this", "them", "the", "a"}:
        return ""
    return f"No ads on {what if what.isupper() else what.title()}"


def _pct_slot(template: str) -> Any:
    def slot(m: re.Match[str], low: str, nxt: str) -> str:
        n = re.search(r"\d+(?:\.\d+)?", m.group(0))
        return template.format(n=n.group(0)) if n else template.format(n="").replace(" %", "")

    return slot


def _cc_slot(m: re.Match[str], low: str, nxt: str) -> str:
    who = re.search(r"\bcc(?:'?d)? (\w+)|(\w+)(?:'s)? (?:gets )?cc'?d", low)
    person = next((g for g in (who.groups() if who else ()) if g), "")
    if person in {"me", "in", "on", "the", "everyone", "i", "you", "will", "is"}:
        person = ""
    topic = re.search(
        r"\bcc'?d?\b[\w' ]{0,20}? on (\w+) (?:stuff|reports?|emails?|updates?|things)", low
    )
    what = (
        f"{topic.group(1)} reports"
        if topic and topic.group(1) not in {"the", "all", "my"}
        else "reports"
    )
    return f"CC {person.title()} on {what}" if person else f"CC on {what}"


def _judge_slot(m: re.Match[str], low: str, nxt: str) -> str:
    rest = low[m.end() :]
    obj = re.split(r"[.,;!?]| not | rather than ", rest)[0].strip()
    if not obj:
        after = re.sub(r"^[\s.,;:!?-]+", "", rest) or nxt
        obj = re.split(r"[.,;!?]", after)[0].strip()
    obj = re.sub(r"\bsqls\b", "SQLs", re.sub(r"\bsql\b", "SQL", obj))
    obj = re.sub(r"^(?:is|are|the)\s+", "", obj)
    obj = " ".join(obj.split()[:8])
    verb = "Judge on" if m.group(0).startswith("judge") else "Focus on"
    return f"{verb} {obj}" if obj else ""


_CADENCE = (
    r"(?:every (?:other )?(?:mon|tues|wednes|thurs|fri|satur|sun)day|every (?:week|month|two weeks|"
    r"other week)|bi-?weekly|weekly|monthly|fortnightly|daily|every day|first (?:mon|tues|wednes|"
    r"thurs|fri)day of (?:the|every) month|(?:mon|tues|wednes|thurs|fri)days? by \d+ ?(?:am|pm)|"
    r"(?:mon|tues|wednes|thurs|fri)day (?:morning|afternoon)s?|every month)"
)
_PREFS: list[tuple[str, Any, re.Pattern[str], bool]] = [
    (cat, slot, re.compile(rx), explicit)
    for cat, slot, rx, explicit in [
        (
            "communication",
            "Short bullet-point updates",
            r"keep it (?:short|brief|tight)|bullet[- ]?"
            r"points?|be (?:brief|concise)|short and sweet|\btl;?dr\b|short answers|short, like|"
            r"\b(?:super|very|really|nice and) short\b",
            True,
        ),
        (
            "communication",
            "Plain English, no jargon",
            r"plain[- ]english|no (?:jargon|acronyms)|not a computer "
            r"guy|(?:talk|explain|speak) (?:to me )?like i'?m|without (?:the )?(?:jargon|acronyms)"
            r"|don'?t know what \w+ (?:means|is)|plain language",
            True,
        ),
        (
            "communication",
            "Detailed analysis with tables and math",
            r"\btables?\b|show me the math|"
            r"long analysis|level of detail|depth over brevity|the math behind|"
            r"detailed (?:reports?|analysis|breakdowns?)|\bcharts?\b|in[- ]depth|deep[- ]dives?|"
            r"with (?:the|all the|more|full) detail",
            True,
        ),
        (
            "communication",
            "Big picture only",
            r"big picture|nitty[- ]gritty|high[- ]level (?:only|"
            r"summary)|skip the details|don'?t (?:need|want) the details",
            True,
        ),
        (
            "reporting",
            _cadence_slot,
            r"(?:reports?|updates?|check[- ]?ins?|summary|recap|calls?|"
            r"(?:send|text|email|e-mail|message|ping|call) me(?: (?:this|it|a \w+))?)\b[^.?!]{0,40}"
            + _CADENCE
            + r"|"
            + _CADENCE
            + r"[^.?!]{0,30}"
            r"\b(?:reports?|updates?|check[- ]?ins?|summary|recap)\b|"
            r"check[- ]?ins? (?:are|is) a bit much|can we do a check[- ]?in",
            True,
        ),
        ("reporting", _cc_slot, r"\bcc\b|\bcc'?d\b|copy (?:in|on) \w+", True),
        (
            "reporting",
            "Flag expected changes in reports",
            r"remind me in the (?:next )?report|flag "
            r"[\w ]+ (?:in|at the top of) (?:the )?(?:next )?report",
            True,
        ),
        (
            "risk",
            _pct_slot("Max {n}% budget changes"),
            r"(?:never|don'?t|no) (?:move|change|raise|shift|"
            r"increase|cut)\w* (?:the )?budgets? by more than \d+ ?%|"
            r"budget changes? (?:over|above|of more than) \d+ ?%|"
            r"(?<!\d)\d+ ?% (?:at a time|at once|cap\b|rule)",
            True,
        ),
        (
            "risk",
            _no_test_slot,
            r"(?:don'?t|do not|never) (?P<verb>experiment|test|mess|touch|change)"
            r"(?: anything| stuff| around)?(?: with| on)? "
            r"(?P<what>(?:the |my |our )?[a-z0-9-]+(?: [a-z0-9-]+)?? ?"
            r"(?:campaign|one)?)\b",
            True,
        ),
        (
            "risk",
            _placement_slot,
            r"(?:don'?t|do not|never) (?:ever )?(?:run|show|advertise|put|place)"
            r"(?: (?:ads|anything|us|our ads))? on (?P<what>[a-z0-9][\w.-]*)",
            True,
        ),
        (
            "risk",
            "Ask before big changes",
            r"always ask|ask me first|check with me (?:first|before)|"
            r"without asking me|(?:call|ask|tell|text) me (?:first |before )",
            True,
        ),
        (
            "risk",
            _pct_slot("{n}% experiment cap"),
            r"experiments? (?:gets? |get )?(?:at most|max(?:imum)?|no "
            r"more than|capped at) \d+ ?%|(?<!\d)\d+ ?% experiment cap",
            True,
        ),
        (
            "risk",
            "Risk tolerance",
            r"risk[- ]averse|risk[- ]tolerant|conservative|(?:fine|ok|happy) "
            r"being aggressive|aggressive in|careful mode|more careful|careful till|play it safe|"
            r"i'?m (?:cautious|careful)|i said aggressive",
            True,
        ),
        (
            "analysis",
            _judge_slot,
            r"judge (?:everything|it|campaigns|us|them|performance) (?:on|by)|all i "
            r"care about(?: is)?|i (?:only )?care about|what matters (?:to me )?is",
            True,
        ),
    ]
]
