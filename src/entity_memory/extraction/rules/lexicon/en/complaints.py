"""English cues of a complaint: what says something is a problem, and what it is about."""

from __future__ import annotations

import re

COMPLAINT_CUE = re.compile(
    r"\b(?:frustrat\w*|annoy\w*|irritat\w*|fed up|sick of|tired of|keeps? happening|I hate|"
    r"(?:drives?|driving) me (?:crazy|nuts|mad|insane|up the wall)|(?:is|are) killing (?:me|us)|"
    r"can'?t stand|(?:worried|concerned|nervous) (?:about|that)|nightmare|headache|garbage|"
    r"useless|wast(?:e|ing) (?:of )?(?:my |our )?(?:money|budget|time)|"
    r"(?:big|biggest|main|real|another) (?:problem|issue)(?: #?\d+)?:|"
    r"(?:the|my|our|biggest|big|main|real) (?:problem|issue) is|drives me (?:crazy|nuts)|"
    r"bugs? me|a (?:real )?pain|pain in the|struggl\w*|(?:not|never) happy (?:with|about)|"
    r"unhappy (?:with|about)|disappointed (?:with|by|in)|keep getting|losing (?:money|sleep)|"
    r"hurting us)\b",
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
    re.compile(r"\bbugs? me(?: is| about| that)?\s+(.+)", re.I),
    re.compile(r"\b(?:happy|disappointed)\s+(?:with|by|in|about)\s+(.+)", re.I),
    re.compile(r"\bstruggl\w*\s+(?:with|to get|to)\s+(.+)", re.I),
    re.compile(r"\bkeep getting\s+(.+)", re.I),
    re.compile(r"\blosing (?:money|sleep) (?:on|over|because of)\s+(.+)", re.I),
    re.compile(
        r"^(.+?)\s+(?:is|are|was|were)(?: still| really| just| such)? (?:a (?:real )?pain|"
        r"hurting us)\b",
        re.I,
    ),
)

#: A preposition that qualifies a one-word complaint ("calls | from job seekers").
QUALIFIER = re.compile(r"^\s*(?:from|of|about|with|on|for)\s+", re.I)

SEVERE = re.compile(r"\b(?:really|very|so|extremely|biggest|huge|big|killing)\b|!", re.I)

#: What an advertiser gets from ads: a problem word before one of these names a pain point
#: ("junk leads", "duplicate conversions", "spam sign-ups"); before anything else ("broken
#: pipes", "missing persons") it describes the business, not a problem with its ads.
AD_OUTCOMES = (
    r"(?:leads?|calls?|clicks?|conversions?|traffic|sign[- ]?ups?|signups?|demos?|bookings?|"
    r"enquir(?:y|ies)|inquir(?:y|ies)|orders?|sales|form fills?|submissions?|impressions?|"
    r"queries|search terms?|keywords?|placements?|installs?|visits?|visitors?)"
)

#: The words that make an ad outcome a problem ("junk" leads, "irrelevant" search terms).
PROBLEM_WORDS = (
    r"(?:junk|spam|spammy|fake|bogus|fraudulent|bot|irrelevant|unqualified|"
    r"low[- ]quality|poor[- ]quality|wasted|duplicated?|missing|untracked)"
)

PROBLEM_NOUN = re.compile(
    rf"\b(?P<name>{PROBLEM_WORDS}(?:\s+[a-z][\w-]*)?\s+{AD_OUTCOMES})\b",
    re.I,
)
#: A problem word alone, as the first word of a pain point's name.
PROBLEM_WORD = re.compile(rf"^{PROBLEM_WORDS}$", re.I)

#: A clause that says a problem is over: fixed, gone, clean, or no longer complained about
#: ("the spam sign-ups are gone", "nobody has complained about fake leads in a month").
RESOLVED_CUE = re.compile(
    r"\b(?:solved|resolved|fixed|sorted(?: out)?|cleared up|clean(?! up)|cleaned up|went away|"
    r"gone(?! (?:up|down|from|to|through|over|into|back|on|out|past|above|below)\b)|"
    r"under control|a thing of the past|no more(?! than)|"
    r"stopped (?:coming|showing up|happening|appearing)|"
    r"(?:no longer|not) (?:a|an) (?:problem|issue)|"
    r"(?:hasn'?t|haven'?t|has not|have not|no one has|nobody has|nobody's|no one's) "
    r"(?:complained|mentioned|flagged|raised|reported|seen|had))\b",
    re.I,
)
#: Before a resolution cue in its clause: it is not over yet, only supposed to be, or asked
#: for ("not fixed", "once it is solved", "should be gone by Friday", "let's get it sorted").
NOT_RESOLVED = re.compile(
    r"\b(?:not|isn'?t|aren'?t|wasn'?t|weren'?t|never|yet|still|if|once|until|unless|when|"
    r"hope\w*|should|will|would|could|might|may|almost|nearly|partly|partially|half|"
    r"get|gets|getting|need\w*|want\w*|let'?s|please|must|have to|has to|going to|gonna|"
    r"try\w*|plan\w*)\b",
    re.I,
)

#: A negation just before a complaint's cue turns it around.
COMPLAINT_NEGATED = re.compile(
    r"\b(?:not|never|no longer|hardly|isn'?t|aren'?t|wasn'?t)\s+(?:\w+\s+)?$", re.I
)

#: A thing the user calls bad: "the new leads are garbage", "X is useless".
BAD_THING = re.compile(
    r"^(?P<about>.+?)\s+(?:is|are|was|were)(?: still| just| really| so| such)?(?: a| an)?\s+"
    r"(?:garbage|junk|useless|awful|terrible|horrible|broken|a mess|a disaster|rubbish)\b",
    re.I,
)
