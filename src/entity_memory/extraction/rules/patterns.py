"""The offline extractor's pattern tables, as data.

Every entry is general English or general advertising usage (the ads words themselves live in
domain/vocab.py); none exists because one conversation happened to use it. A detector that needs
a new cue adds it here, where all of them can be read at once.
"""

from __future__ import annotations

import re

from entity_memory.domain.vocab import BID_STRATEGIES, KPI_NAMES, PLATFORMS, STATUSES

# --- words that can never end a name -------------------------------------------------------------

#: Determiners, prepositions, conjunctions, pronouns and auxiliaries: a name ending on one of
#: these was cut mid-phrase.
FUNCTION_WORDS = frozenset(
    """a an the this that these those my our your their its his her to for and or but nor of
    with without from by at in on into onto over under about as than then so if when while
    because since until is are was were be been being am do does did has have had will would
    can could should may might must shall it they we i you he she them us me which who whom
    what where how why not no very just also too more most less some any all each every per
    via vs i'm i've i'd i'll we're we've we'd we'll it's that's there's they're you're don't
    doesn't didn't can't won't around through across along behind beyond near toward towards
    within during after before between against among above below upon like where there
    actually really only even maybe probably basically""".split()
)
#: Copulas and auxiliaries: a name containing one is a clause ("Campaign is", "budget was").
NAME_VERBS = frozenset(
    """is are was were be been being am isn't aren't wasn't weren't has have had does did""".split()
)
#: Common verbs: a noun phrase stops at one ("sales | says the leads are bad").
COMMON_VERBS = frozenset(
    """says said say get gets got go make makes made come comes came seem seems look looks
    show shows showed take takes took want wants need needs think thinks know knows call calls
    cost costs run runs work works happen happens break breaks broke stop stops tell tells told
    eat eats ate send sends sent find finds found give gives gave""".split()
)
#: Verbs at which a noun phrase stops ("conversion tracking | keeps breaking").
CLAUSE_VERBS = NAME_VERBS | frozenset("do will would can could should keeps kept goes went".split())

# --- sentence cues -------------------------------------------------------------------------------

#: A sentence that only asks, supposes or gives an example states no fact.
NOT_A_STATEMENT = re.compile(
    r"\?\s*$|^\s*(?:if|what if|suppose|imagine|for example|e\.g\.|say)\b|\bwould you\b",
    re.IGNORECASE,
)
#: Where one clause ends and the next begins inside a sentence.
CLAUSE_SPLIT = re.compile(
    r"\s*[,;]\s+|\s+(?:so|but|because|since|while|whereas|and then)\s+|\s+[\u2013\u2014]\s+", re.I
)

# --- amounts -------------------------------------------------------------------------------------

_NUMBER = r"(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
#: A money amount: "$150", "$1,200.50", "150 USD".
MONEY = re.compile(
    rf"(?:[$€£]\s?(?P<a>{_NUMBER})(?P<k>k\b)?|(?P<b>{_NUMBER})\s?(?:usd|eur|gbp)\b)", re.I
)
#: Any KPI value: money, a percentage, a ratio ("3.1", "3.1x", "410%").
VALUE = re.compile(
    rf"(?P<cur>[$€£])?\s?(?P<num>(?<![\d.,]){_NUMBER})(?P<k>k\b)?\s?(?P<unit>%|x\b|percent\b)?",
    re.I,
)
PER_DAY = re.compile(r"^\s*(?:/\s*day|per day|a day|daily|/d\b)", re.I)
#: "budget" with what may sit between it and its amount ("budget is now", "daily budget of").
BUDGET_BEFORE = re.compile(
    r"\bbudgets?\s*(?:is|was|of|at|to|=|:|now|currently|set|goes|went|raised|lowered|cut|"
    r"increased|decreased|will be|\s)*$",
    re.I,
)
BUDGET_AFTER = re.compile(r"^\s*(?:/\s*day\s*|per day\s*|a day\s*|daily\s*)*budget\b", re.I)
#: "goes to $70", "raise it to $80": the amount a budget ends up at.
RESULTING_AMOUNT = re.compile(
    r"\b(?:goes|go|going|went|set|setting|raise[sd]?|raising|increase[sd]?|increasing|"
    r"lower(?:ed|ing)?|cut|cutting|drop(?:ped|ping)?|bump(?:ed|ing)?|cap(?:ped)?|"
    r"reduce[sd]?|reducing|up|down)\b[^$€£]{0,30}?\bto\s*$",
    re.I,
)
#: An amount that is moved, not held: "move $50 from A to B".
TRANSFER_BEFORE = re.compile(
    r"\b(?:move[sd]?|moving|shift(?:ed|ing)?|reallocat\w*|transfer\w*|take|took|taking|"
    r"pull(?:ed|ing)?|by|extra|another|additional|more)\s*$",
    re.I,
)

# --- campaigns -----------------------------------------------------------------------------------

_PROPER = r"[A-Z0-9][\w&'+.-]*"
#: "Campaign Alpha", "Campaign 2".
CAMPAIGN_PREFIXED = re.compile(rf"\b[Cc]ampaign\s+(?P<name>{_PROPER}(?:\s+{_PROPER}){{0,2}})")
#: "the Spring Sale campaign".
CAMPAIGN_SUFFIXED = re.compile(rf"\b(?P<name>{_PROPER}(?:\s+{_PROPER}){{0,3}})\s+campaign\b")
#: A quoted name next to the word campaign: `campaign "Spring - Sale"`, `"Spring" campaign`.
CAMPAIGN_QUOTED = re.compile(
    r"\bcampaign\s+[\"“'](?P<a>[^\"”'\n]{2,60})[\"”']|[\"“](?P<b>[^\"”\n]{2,60})[\"”]\s+campaign\b",
    re.I,
)
PLATFORM_RE = re.compile(
    r"\b(?P<name>"
    + "|".join(PLATFORMS)
    + r")\b(?!\s+(?:Ads|Analytics|Tag|Merchant|Business|Pixel))"
)
STRATEGY_RES = [(re.compile(rf"\b(?:{p})\b", re.I), name) for p, name in BID_STRATEGIES]
STATUS_RE = re.compile(
    r"\b(?:is|are|was|were|stays?|remains?|now|been|got|currently|we|i|they)\s+(?:now\s+)?"
    r"(?P<status>" + "|".join(STATUSES) + r")\b",
    re.I,
)
#: "switch X to Target CPA": the strategy after "to"/"onto"/"on" is the one in force.
STRATEGY_TARGET_CUE = re.compile(r"\b(?:to|onto|on|uses?|using|runs?|running)\s+$", re.I)

# --- metrics -------------------------------------------------------------------------------------

KPI_RES = [(re.compile(rf"(?<![\w-])(?:{p})(?![\w-])", re.I), name) for p, name in KPI_NAMES]
#: KPIs named by their unit of cost or their funnel step ("cost per booking", "lead-to-sale
#: rate"): named as written.
KPI_RES.append(
    (re.compile(r"(?<![\w-])(?:cost per [a-z]{3,}|[a-z]+-to-[a-z]+ rate)(?![\w-])", re.I), "")
)
#: Words that may sit between a KPI and its value ("CPA is now at $42").
KPI_LINK = re.compile(
    r"^\s*(?:(?:is|was|are|were|of|at|sits|stands|came|in|hit|hits|averag\w*|now|currently|"
    r"right|about|around|roughly|dropped|fell|rose|climbed|went|up|down|to|from|=|:|~|-)\s*){0,4}$",
    re.I,
)
#: A value that is a goal, not a measurement.
TARGET_BEFORE = re.compile(
    r"\b(?:target(?:ing)?|goal|aim(?:ing)?|want\w*|need\w*|should|hope|get it|bring it|"
    r"keep it)\b[^.]{0,25}$",
    re.I,
)
TARGET_AFTER = re.compile(r"^\s*(?:target|goal)\b", re.I)
#: A value only compared against ("under $30"): neither a measurement nor, alone, a target.
COMPARATOR_BEFORE = re.compile(
    r"\b(?:under|below|above|over|less than|more than|at most|at least|up to)\s*$", re.I
)
#: A strategy's own figure ("Target CPA of $40") is not the KPI's measured value.
STRATEGY_PREFIX = re.compile(r"\b(?:target|t-?)\s*$", re.I)

# --- people's words ------------------------------------------------------------------------------

PREFERENCE_CUE = re.compile(
    r"\b(?:I(?:'d| would)? prefer|I(?:'d| would) rather|I always want|always|never|"
    r"please keep|keep (?:it|them|things|reports?|updates?) (?:short|brief|simple|concise|under|"
    r"below|within)|please don'?t|don'?t\s+\w+(?:\s+\w+){0,5}\s+without (?:asking|"
    r"checking|my (?:ok|okay|approval|sign-off))|from now on)\b",
    re.I,
)
#: How a standing instruction is phrased: a request, a rule or a stated way of working (a
#: preference needs one of these AND a topic of how the user works with the assistant).
STANDING_FORM = re.compile(
    r"\b(?:please|pls|plz|always|never|don'?t|do not|going forward|from here on|from now on|"
    r"in (?:the )?future|I(?:'d| would)? (?:rather|prefer|like)|I (?:want|need)|"
    r"(?:can|could) (?:you|we)|keep (?:it|them|things)|send me|show me|give me|"
    r"no more than|not more than|at most|max(?:imum)?|every|each)\b",
    re.I,
)
#: What makes an instruction standing rather than one-off: it repeats ("every Friday", "from
#: now on", "weekly"), sets a limit ("at most 10%"), or sets a style that holds for every
#: answer ("short", "bullet points", "tables"). "Send me last month's report" has none.
STANDING_MARK = re.compile(
    r"\b(?:always|never|every|each time|whenever|from now on|going forward|from here on|"
    r"in (?:the )?future|by default|no more than|not more than|at most|max(?:imum)?\s+\d|"
    r"weekly|monthly|daily|biweekly|fortnightly|short|shorter|brief|concise|bullets?|"
    r"bullet points?|tables?|charts?|jargon|detailed|in detail)\b",
    re.I,
)
#: What a preference is about: reports and updates, how to answer, how much risk to take.
STANDING_TOPIC = re.compile(
    r"\b(?:reports?|reporting|updates?|summar(?:y|ies)|recaps?|emails?|messages?|check[- ]?ins?|"
    r"calls?|meetings?|tables?|charts?|graphs?|bullets?|bullet points?|short|brief|concise|"
    r"detail(?:ed|s)?|long|math|numbers|jargon|explain\w*|language|tone|format|inbox|"
    r"dashboards?|weekly|monthly|daily|biweekly|fortnightly|(?:mon|tues|wednes|thurs|fri|satur|"
    r"sun)days?|mornings?|budgets?|spend|experiments?|tests?|testing|risk\w*|approv\w*|"
    r"ask(?:ing)? me|check with me|changes?|caps?|limits?|\d+\s?%)\b",
    re.I,
)
#: "Could you email me a recap each Monday?" asks for a standing arrangement, not an answer.
STANDING_REQUEST = re.compile(r"^\W*(?:\w+\s+){0,2}(?:can|could) (?:you|we)\b", re.I)

#: Verbs that change an account: a commitment to one of these is a decision.
ACTION_VERBS = frozenset(
    """pause enable launch start stop switch move shift raise increase lower reduce cut add remove
    exclude test try keep set change split create build turn drop reallocate cap restructure
    consolidate update hold freeze run use focus double halve scale narrow broaden expand
    rename archive resume relaunch replace rebuild bid target limit allocate put""".split()
)
DECISION_CUE = re.compile(
    r"\b(?:let'?s|let us|we'll|we will|we're going to|we are going to|I'm going to|"
    r"I am going to|I'll|I will|we decided to|I've decided to|I decided to)\s+(?P<rest>.+)",
    re.I,
)
PROPOSAL_CUE = re.compile(
    r"\b(?:I(?:'d| would)? (?:recommend|suggest|propose)(?:ing)?|my recommendation is(?: to)?|"
    r"we should|you should|I can|shall I|want me to|should I|I'd|I would|we could|"
    r"I'd like to)\s+(?P<rest>.+)",
    re.I,
)
#: A user turn that accepts what the assistant just proposed: a clear yes, or a bare "ok"
#: that says nothing else first.
ACCEPTANCE = re.compile(
    r"^\s*(?:(?:yes|yeah|yep|yup|agreed|approved|go ahead|do it|please do|sounds good|"
    r"let'?s do it|deal)\b|(?:ok|okay|sure)(?:\s*[,.!]?\s*(?:do it|go|go ahead|yes|let'?s)\b|"
    r"\s*[.!]?\s*$))(?!\s*,?\s*(?:but|wait|not)\b)",
    re.I,
)
#: A user sentence that instructs an account change: it starts with the verb ("Pause X").
IMPERATIVE = re.compile(
    r"^(?:(?:ok|okay|and|so|then|please|also)[,.]?\s+)*(?P<rest>[a-z]+\b.*)", re.I
)
COMPLAINT_CUE = re.compile(
    r"\b(?:frustrat\w*|annoy\w*|irritat\w*|fed up|sick of|tired of|keeps? happening|I hate|"
    r"(?:drives?|driving) me (?:crazy|nuts|mad|insane|up the wall)|(?:is|are) killing (?:me|us)|"
    r"can'?t stand|(?:worried|concerned|nervous) (?:about|that)|nightmare|headache|garbage|"
    r"useless|wast(?:e|ing) (?:of )?(?:my |our )?(?:money|budget|time)|"
    r"(?:big|biggest|main|real|another) (?:problem|issue)(?: #?\d+)?:|"
    r"(?:the|my|our|biggest|big|main|real) (?:problem|issue) is|drives me (?:crazy|nuts))\b",
    re.I,
)
#: What a complaint is about: "frustrated that/with/by X", "the problem is X", "X keeps ...".
COMPLAINT_OBJECTS = (
    re.compile(
        r"\b(?:frustrat\w*|annoy\w*|fed up|sick|tired)\s+(?:that|with|by|about|of)\s+(.+)", re.I
    ),
    re.compile(r"\b(?:problem|issue) is(?: that)?\s+(.+)", re.I),
    re.compile(r"\b(?:problem|issue)(?: #?\d+)?:\s+(.+)", re.I),
    re.compile(r"\bI hate\s+(?:it when\s+|that\s+|how\s+)?(.+)", re.I),
    re.compile(r"^(.+?)\s+(?:keeps?|kept)\s+\w+", re.I),
    re.compile(
        r"^(.+?)\s+(?:is|are|was|were)\s+(?:still\s+|really\s+)?(?:annoying|frustrating)\b",
        re.I,
    ),
    re.compile(
        r"^(.+?)\s+(?:(?:drives?|driving) me|(?:is|are) killing|(?:is|are|was|were)"
        r"(?: still| really| just)? (?:garbage|useless|a nightmare|a headache))\b",
        re.I,
    ),
    re.compile(r"\b(?:worried|concerned|nervous) (?:about|that)\s+(.+)", re.I),
    re.compile(r"\bcan'?t stand\s+(.+)", re.I),
)
SEVERE = re.compile(r"\b(?:really|very|so|extremely|biggest|huge|big|killing)\b|!", re.I)
#: Preference topics, first match wins.
PREFERENCE_CATEGORIES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("risk", re.compile(r"\b(?:budget|spend|approv\w*|asking|ask|risk|cap|limit|without)\b", re.I)),
    (
        "reporting",
        re.compile(
            r"\b(?:report\w*|dashboard|weekly|monthly|daily|biweekly|summary|recaps?|updates?|"
            r"check[- ]?ins?|every (?:day|week|month|other week|\w+day))\b",
            re.I,
        ),
    ),
    ("analysis", re.compile(r"\b(?:data|numbers?|math|analys\w*|test\w*|significan\w*)\b", re.I)),
)
