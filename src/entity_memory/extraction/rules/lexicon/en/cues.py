"""English cues the rules read in a sentence: what states, proposes, decides, prefers or
complains, and the words around an amount, a KPI and a campaign's settings."""

from __future__ import annotations

import re

from entity_memory.domain.vocab import BID_STRATEGIES, KPI_NAMES, PLATFORMS, STATUSES

# --- sentence cues -------------------------------------------------------------------------------

#: A sentence that only asks, supposes or gives an example states no fact.
NOT_A_STATEMENT = re.compile(
    r"\?\s*$|^\s*(?:if|what if|suppose|imagine|for example|e\.g\.|say)\b|\bwould you\b",
    re.IGNORECASE,
)
#: How people talk about how they work with the assistant (reports, updates, calls): a
#: change to one of these is a preference revised, not a decision about the account.
WORKING_TOPIC = re.compile(
    r"\b(?:reports?|reporting|updates?|summar(?:y|ies)|recaps?|emails?|check[- ]?ins?|"
    r"meetings?|newsletters?|digests?)\b",
    re.I,
)
#: A clause that supposes, weighs or refuses what it says: nothing in it is in force.
HYPOTHETICAL = re.compile(
    r"\b(?:would|could|might|maybe|perhaps|if|unless|suppose|imagine|consider\w*|idea|option|"
    r"instead of|rather than|not|never|don'?t|doesn'?t|won'?t|wouldn'?t|shouldn'?t|can'?t|"
    r"no longer|what about|how about)\b",
    re.I,
)
#: A clause about the whole account, not one campaign ("overall CPA", "across the account").
ACCOUNT_WIDE = re.compile(
    r"\b(?:overall|account[- ]wide|across (?:the|all|every)|in total|blended|all campaigns|"
    r"every campaign|the (?:whole|entire) account)\b",
    re.I,
)
#: A turn away from what was just said: what follows is about something else.
CONTRAST = re.compile(r"\b(?:but|while|whereas|although|though|however|meanwhile)\b", re.I)
#: A sentence that turns down what it just said ("..., and decided against it").
TURNED_DOWN = re.compile(
    r"\b(?:decided against|ruled (?:it|that) out|rejected|scrap(?:ped)? (?:it|that)|"
    r"(?:won'?t|will not|not going to) do (?:it|that)|no way)\b",
    re.I,
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
#: A value that ends the text before a KPI ("$42 CPA", "3.1 ROAS").
VALUE_AT_END = re.compile(rf"{VALUE.pattern}\s*$")
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
#: After an amount: it is moved or compared ("$50 from X", "$20 more"), not held.
TRANSFER_AFTER = re.compile(r"\s*(?:from|more|less|extra)\b")

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
#: A report of a status change made ("Paused X.", "Done: re-enabled X"): the status it left.
REPORTED_STATUS = re.compile(
    r"^(?:(?:done|ok|okay|all set|updated)\s*[:.,!-]\s*)?(?:I(?:'ve| have)?\s+)?"
    r"(?P<verb>paused|unpaused|enabled|re-?enabled|resumed|relaunched|removed)\s+",
    re.I,
)
REPORTED_STATUSES = {
    "paused": "paused",
    "unpaused": "enabled",
    "enabled": "enabled",
    "reenabled": "enabled",
    "re-enabled": "enabled",
    "resumed": "enabled",
    "relaunched": "enabled",
    "removed": "removed",
}
#: A label that opens a report ("Done:", "Update:"): the sentence's subject follows it.
OPENING_LABEL = re.compile(r"^\W*\w+\s*:\s*")
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
    r"^\s*(?:(?:is|was|are|were|of|at|there|sits|stands|came|in|hit|hits|averag\w*|now|currently|"
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
#: A reply that qualifies its yes ("yes, but skip X", "sure. Don't touch Y"): it accepts
#: something, not clearly the proposal, so it accepts nothing.
RESERVATION = re.compile(
    r"\b(?:but|not|no|don'?t|do not|never|skip|except|hold off|rather|instead|though|"
    r"however|only|wait|later)\b",
    re.I,
)
#: A sentence that turns to another topic: what follows answers nothing before it.
TOPIC_CHANGE = re.compile(
    r"^\W*(?:by the way|btw|also|another thing|separately|unrelated|on another note|oh and|"
    r"one more thing)\b",
    re.I,
)
#: A user sentence that instructs an account change: it starts with the verb ("Pause X").
IMPERATIVE = re.compile(
    r"^(?:(?:ok|okay|and|so|then|please|also)[,.]?\s+)*(?P<rest>[a-z]+\b.*)", re.I
)
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

# --- campaign facts --------------------------------------------------------------------------

SPEND_BEFORE = re.compile(
    r"\b(?:spen[dt]\w*|cost|costs|paid|paying|revenue|sales)\b[^$]{0,15}$", re.I
)

ADJACENT_TO_NAME = re.compile(
    r"^(?:'s)?\s*(?:campaign\s*)?(?:(?:has|had|with|is|at)\s+)?(?:(?:a|an|the)\s+)?"
    r"(?:daily\s+)?(?:budget\s*)?(?:is|at|to|goes to|now|on|of|:|=|-|\s)*$",
    re.I,
)

BID_WORDS = re.compile(r"\b(?:bid\w*|strategy|strategies)\b", re.I)

# --- decisions -------------------------------------------------------------------------------

REASON = re.compile(r"\b(?P<conj>because|since|as|so that|to avoid)\s+(?P<why>.+)$", re.I)
#: "as" and "since" give a reason only before a clause ("as the CPA is too high"); before a
#: noun or a date they say what as or since when ("added as negatives", "since March").
AMBIGUOUS_REASON = frozenset({"as", "since"})
REASON_CLAUSE = re.compile(
    r"\b(?:is|are|was|were|has|have|had|does|do|did|will|would|can|could|keeps?|"
    r"isn'?t|aren'?t|wasn'?t|doesn'?t|don'?t|didn'?t|won'?t|can'?t|\w+ed)\b|'(?:s|re)\b",
    re.I,
)

DECISION_NEGATED = re.compile(r"^\s*(?:not|never|hold off|wait)\b", re.I)

#: After a comma, a list goes on ("add cheap, free and diy as negatives"), a clause does not.
LIST_GOES_ON = re.compile(r"^\s*[\w'-]+(?:\s+[\w'-]+)?\s*(?:,|\s(?:and|or)\s)", re.I)

VERB_IT = re.compile(r"^(\w+)\s+it\b", re.I)

#: Lowercase articles inside a decision's name: a name reads as a headline ("Lower budget to
#: $20/day"); the capital "A" of "Ad Group A" is a name, not an article.
ARTICLE = re.compile(r"\s+(?:the|a|an)\s+")

#: How an assistant reports a change it made: "Paused X.", "Done: added ...", "I've raised ...",
#: "I set up ...". The verb is past tense and starts the report.
CHANGE_REPORT = re.compile(
    r"^(?:(?:done|ok|okay|all set|updated)\s*[:.,!-]\s*)?(?:I(?:'ve| have)?\s+)?"
    r"(?P<verb>[a-z]+)\b(?P<rest>.*)",
    re.I,
)

#: A report that says who made the change ("I've ...", "Done: ...").
SAID_WHO = re.compile(r"^(?:(?:done|all set|updated)\s*[:.,!-]\s*|I(?:'ve| have)?\s+)", re.I)

#: Account verbs whose past form reports work, not a change ("I ran the numbers").
NOT_A_CHANGE = frozenset({"run", "start", "test", "try", "use", "focus", "keep", "hold", "target"})

#: Past forms that are not "-ed" forms of the base (set, cut, put are the same in both).
IRREGULAR_PAST = {"set": "set", "cut": "cut", "put": "put", "built": "build", "ran": "run"}

# --- KPI readings ----------------------------------------------------------------------------

#: The words that tie a campaign named between a KPI and its value ("CPA on the X campaign is").
CAMPAIGN_LEAD_IN = re.compile(r"^\s*(?:on|for|in|of)\s+(?:the\s+)?(?:campaign\s+)?", re.I)
#: A KPI said in the plural is the same KPI ("conversion rates").
PLURAL_RATES = re.compile(r"rates$")
#: Between two values of "went from $5 to $6".
TO_BETWEEN = re.compile(r"\s*to\s*")

TARGET_LINK = re.compile(r"^\s*(?:target|goal)\s*(?:is|was|of|at|:|=)?\s*$", re.I)

#: Right before a target amount: the preposition that ties it to the goal word.
TARGET_PREP = re.compile(
    r"\b(?:under|below|above|over|at|to|of|around|target|goal|is|was|be)\s*[:=]?\s*$", re.I
)

#: "$140 per lead", "$1.75 a click": a cost per unit, stated value first.
UNIT_COST = re.compile(
    r"[$€£]\s?\d[\d,.]*\s+(?P<per>(?:per|a|an|each)\s+(?P<unit>[a-z]{3,}))\b", re.I
)

TIME_UNITS = frozenset("day days week month year hour night time piece".split())

FROM_BEFORE = re.compile(r"\bfrom\s*$", re.I)

#: A number followed by one of these counts something else ("30 days", "2 weeks"), or is a
#: daily budget ("81% search share at $40/day": the share is 81).
NOT_A_KPI_VALUE = re.compile(
    r"^\s*(?:(?:days?|weeks?|months?|years?|hours?|clicks|people)\b|/\s*day\b|per day\b|a day\b)",
    re.I,
)

#: Between a Target CPA and the figure in force: "tCPA is now $44", "Target CPA at $52",
#: "Target CPA set to $40", "tCPA lowered to $41", "moved tCPA from $50 to $44" (the figure
#: after "to"). Not "was" ("was $40, now $44": which one holds?).
STRATEGY_LINK = re.compile(
    r"\s*(?:(?:is|now|at|of|to|set|:|=|lowered|raised|cut|moved|changed|dropped|reduced|"
    r"increased|decreased|updated|went|goes)\s*){0,3}"
    r"(?:from\s*[$€£]\s?[\d,.]+k?\s*to\s*)?",
    re.I,
)

#: A clause that proposes, plans, doubts, denies or conditions the figure: not in force.
NOT_IN_FORCE = re.compile(
    r"\b(?:should|could|would|might|may|maybe|perhaps|if|unless|never|not|no|don'?t|let'?s|"
    r"will|going to|plan\w*|need\w*|like|suggest\w*|propos\w*|recommend\w*|consider\w*|"
    r"try\w*|test\w*|want\w*|or)\b|\?",
    re.I,
)

#: After the figure: a budget or a change, not a target ("$60/day", "20% lower", "$500 spend").
NOT_A_TARGET_AFTER = re.compile(
    r"^\s*(?:/\s*day|per day|a day|daily|budget|spend|higher|lower|more|less|cheaper)\b", re.I
)

# --- preferences -----------------------------------------------------------------------------

#: "always"/"never" state a preference only as an instruction ("Always ask ...", "please never
#: ..."), not as a description ("it never loads").
STANDING_ALWAYS = re.compile(r"(?:^|[,;:]\s*|\b(?:I|we|please|you)\s+)(?:always|never)\b", re.I)

#: Verbs that ask for one change, not a way of working (with ACTION_VERBS).
ONE_OFF_VERBS = frozenset({"give", "get", "spend", "put", "make", "do"})

#: "keep it short" is how to work; "keep X running" is a change to the account.
KEEP_HOW = re.compile(r"keep (?:it|them|things|me)\b", re.I)

#: The asking words of a request ("could you email me ..." prefers "email me ...").
REQUEST_WORDS = re.compile(
    r"^(?:(?:can|could) (?:you|we)|please|pls|plz|I (?:only )?(?:want|need|care about)|"
    r"I(?:'d| would) like)\s+",
    re.I,
)

#: A preference that replaces an earlier one says so ("Thursdays instead").
REVISION_CUE = re.compile(
    r"\b(?:instead|changed|moved|switched|no longer|rather than|from now on)\b", re.I
)

#: Cue words that are not part of what is preferred.
PREFER_WORDS = re.compile(
    r"^(?:I(?:'d| would)? prefer|I(?:'d| would) rather|I always want|from now on,?)\s+", re.I
)
