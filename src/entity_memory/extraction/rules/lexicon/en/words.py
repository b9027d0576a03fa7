"""English words the rules read to cut names: word classes, name and table vocabulary."""

from __future__ import annotations

import re

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
    actually really only even maybe probably basically instead rather though""".split()
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

# --- sentences and turns -------------------------------------------------------------------------

#: Abbreviations a full stop does not end a sentence after ("e.g.", "vs.").
ABBREVIATION = re.compile(r"(?:\b(?:e\.g|i\.e|vs|etc|approx|incl|mr|mrs|ms|dr|st|no)\.)$", re.I)
#: A transcript's speaker label at the start of a line ("User: ...").
ROLE_LABEL = re.compile(r"^\s*(?:user|assistant|human|ai)\s*:\s*", re.I)
#: Words before a KPI that still mean the whole account ("our overall CPA", "average CPC"):
#: any other word there ("mobile CPA", "weekend CTR") names a part the reading is about.
ACCOUNT_KPI_WORDS = frozenset(
    """overall total blended average avg account account-wide current actual real true
    monthly weekly daily yearly annual new same usual typical""".split()
)
#: Right after a KPI, what it is of, in capitals ("CPA on ZX", "cost per sale (ZX)"): a place
#: where a campaign's short part names the campaign.
KPI_OF_PART = re.compile(
    r"\s*(?:\(|\b(?:on|for|in|of)\s+)(?P<part>[A-Z][\w&+]*)\b"
    r"(?=\s*(?:[:),.;=]|$|(?:is|was|are|were|at|now|sits|stands|came)\b))"
)  # not "CPA for US shoppers": a word after it makes it a qualifier of something else
#: The word that ends a text ("... trail" of "... trail CPA").
WORD_BEFORE = re.compile(r"([A-Za-z][\w'-]*)\s*$")
#: A sentence that points back at the campaign its turn was already about: "its", "their",
#: or "there" after a noun or verb ("the cost per sale there is $12"), not the "there" that
#: opens a clause ("there are two", "so there is a gap").
BACK_REFERENCE = re.compile(
    r"\b(?:its|it's|it is|their)\b|"
    r"\b(?!(?:and|but|or|so|then|because|if|when|that|which|where|while|as|since|though|"
    r"although|now|well|yes|ok|okay|is|are|was|were|be|been)\b)[a-z]+\s+there\b(?!['\u2019])",
    re.I,
)

# --- names and phrases -----------------------------------------------------------------------

LEADING_WORDS = frozenset(
    """a an the this that these those my our your their its his her some any all most many
    yeah yes ok okay so well honestly also still""".split()
)

#: Words at which a noun phrase stops (a verb, a preposition, a conjunction).
PHRASE_STOPS = FUNCTION_WORDS | CLAUSE_VERBS | COMMON_VERBS

PRONOUNS = frozenset("it them this that these those".split())

#: Head nouns too vague to name anything ("the phone thing").
VAGUE = frozenset("thing things stuff one ones something everything anything".split())

#: Verbs that change a setting: "switch X from A to B" went from the state A to the state B.
#: (Not "move/shift X from A to B", a source and a destination; not "exclude X from A to cut
#: junk", where "to" starts a purpose.)
STATE_CHANGE_VERBS = frozenset(
    "switch change convert update raise lower increase decrease reduce bump drop set".split()
)

# --- campaign names --------------------------------------------------------------------------

PROPER_BEFORE_KPI = re.compile(
    r"(?P<name>(?:[A-Z][\w&'+-]*\s+)(?:[A-Z0-9][\w&'+-]*\s+){0,3})(?=(?:[A-Z]{2,5}|budgets?)\b)"
)

#: Dash-separated campaign names, a common account naming convention ("Brand - Exact").
DASHED_NAME = re.compile(
    r"(?<![\w-])(?P<name>[A-Z][\w&+]*(?:\s+[A-Z0-9][\w&+]*){0,3}"
    r"(?:\s+[-\u2013|]\s+[A-Z0-9][\w&+]*(?:\s+[A-Z0-9][\w&+]*){0,3}){1,3})(?![\w-])"
)

#: A listing line "Greek Coast Tours: $80/day, Manual CPC": a name labelling the facts after it.
LABELLED_LINE = re.compile(
    r"^(?P<name>[A-Z][\w&'+-]*(?:\s+[A-Z0-9-][\w&'+-]*){0,5}):\s+(?P<rest>.+)"
)

FACT_AFTER_LABEL = re.compile(
    r"[$€£]\s?\d|\d\s?%|\b(?:manual|maximi[sz]e|target|paused|enabled)\b", re.I
)

#: Words that start bid strategies and KPI phrases, never a campaign name ("Manual CPC").
NOT_NAME_STARTS = frozenset("target manual enhanced average avg overall total blended max".split())

#: Words that follow a campaign name but are not part of it ("Spring Sale ROAS").
NOT_NAME_ENDS = frozenset("cpa roas ctr cpc cpm cpl cvr aov budget budgets".split())
#: Words of an ad platform's products and accounts: "Google Ads", "Meta Business" name the
#: platform (with vocab.PLATFORMS and the channel words), never a campaign.
PLATFORM_PRODUCT_WORDS = frozenset(
    "ads ad analytics business manager account accounts campaign campaigns network".split()
)
#: Words of a date ("Mar 3 - Mar 16", "Tuesday the 4th"): a name made of these is a period.
DATE_WORDS = frozenset(
    """jan january feb february mar march apr april may jun june jul july aug august sep sept
    september oct october nov november dec december mon monday tue tues tuesday wed wednesday
    thu thur thurs thursday fri friday sat saturday sun sunday week weekend month year q1 q2 q3
    q4 today yesterday tomorrow the to through until from and""".split()
)
#: A number or an ordinal within a date ("3", "16th", "2024").
DATE_NUMBER = re.compile(r"^\d{1,4}(?:st|nd|rd|th)?$", re.I)

# --- tables ----------------------------------------------------------------------------------

#: A cell that is one number (with currency, thousands, %, x, a "~" or "about").
NUMBER_CELL = re.compile(
    r"^(?:~|about |approx\.? )?(?P<cur>[$€£])?\s?"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?P<k>k)?\s?(?P<unit>%|x)?$",
    re.I,
)

#: First header cells of a table whose rows are KPIs.
KPI_ROW_HEADERS = frozenset({"metric", "metrics", "kpi", "kpis", "measure", ""})

#: Header words that name what a row is (not a KPI column).
NAME_COLUMNS = frozenset({"campaign", "campaigns", "ad group", "channel", "name", "source"})

#: KPIs worth keeping from a table: costs per result, rates, ratios and shares. Raw counts and
#: spend columns are the table's context, not facts a person would carry to the next session.
EFFICIENCY = re.compile(
    r"\b(?:cpa|cpc|cpm|cpl|cps|roas|roi|ctr|cvr|rate|share|margin|aov|value|per)\b|"
    r"\bcost\s*(?:/|per\b)|%",
    re.I,
)

#: A column of money to spend, not a result ("Budget/day").
NOT_A_KPI_COLUMN = re.compile(r"\bbudget", re.I)

#: Header words of a table whose rows are campaigns.
CAMPAIGN_HEADER = re.compile(r"\b(?:campaigns?|ad groups?|asset groups?)\b", re.I)

#: Columns of a KPI row that are not its current value, and those that are.
NOT_CURRENT = re.compile(r"\b(?:target|goal|last|previous|prior|before|old|was)\b", re.I)
#: A column of goals, not of measurements, even when it is the only one.
GOAL_COLUMN = re.compile(r"\b(?:target|goal|plan(?:ned)?|budget)\b", re.I)

CURRENT_COLUMN = re.compile(r"\b(?:current|now|this|after|latest|new|today)\b", re.I)
