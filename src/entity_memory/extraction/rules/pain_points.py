"""Pain points: explicit complaints in the user's own words ("I'm frustrated that ...", "the
problem is ...", "... keeps happening"). The name is what the complaint is about, as a noun
phrase; a complaint about "it" or "this" names nothing, so it is not stored."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from entity_memory.extraction.rules.mentions import MentionFinder
from entity_memory.extraction.rules.names import noun_phrase
from entity_memory.extraction.rules.patterns import (
    COMPLAINT_CUE,
    COMPLAINT_OBJECTS,
    NOT_A_STATEMENT,
    SEVERE,
)
from entity_memory.extraction.rules.sentences import Sentence


@dataclass
class PainPoint:
    name: str
    severity: str
    campaigns: list[str]
    frequency: int = 1
    sources: list[Sentence] = field(default_factory=list)


#: Words that name a problem with what follows them: "junk leads", "duplicate conversions",
#: "spam clicks", "untracked calls". Said by the user, the phrase is the pain point's name.
_PROBLEM_NOUN = re.compile(
    r"\b(?P<name>(?:junk|spam|spammy|fake|bogus|fraudulent|bot|irrelevant|unqualified|"
    r"low[- ]quality|poor[- ]quality|wasted|duplicated?|missing|untracked|broken)"
    r"(?:\s+(?!(?:again|still|too|today|now|this|that|every|each|from|in|on|at|for|with|is|are|"
    r"was|were|and|or)\b)[a-z][\w-]*){1,2})",
    re.I,
)
#: A thing the user calls bad: "the new leads are garbage", "X is useless".
_BAD_THING = re.compile(
    r"^(?P<about>.+?)\s+(?:is|are|was|were)(?: still| just| really| so| such)?(?: a| an)?\s+"
    r"(?:garbage|junk|useless|awful|terrible|horrible|broken|a mess|a disaster|rubbish)\b",
    re.I,
)


def detect(sentence: Sentence, finder: MentionFinder) -> PainPoint | None:
    text = sentence.text
    if sentence.role != "user" or NOT_A_STATEMENT.search(text):
        return None
    if not COMPLAINT_CUE.search(text):
        return _named_problem(sentence, finder)
    for pattern in COMPLAINT_OBJECTS:
        m = pattern.search(text)
        # The object follows the cue ("frustrated that X, ..."), the subject precedes it
        # ("..., X keeps failing"): take the clause next to the cue.
        about = m.group(1).split(",") if m else []
        about_text = about[-1] if m and m.start(1) == 0 else (about[0] if about else "")
        about_text = about_text.split(":")[-1]  # "Big problem #1: the demos are garbage"
        if m and (name := noun_phrase(about_text, max_words=5, min_words=2)):
            name = name[0].upper() + name[1:]
            severity = "high" if SEVERE.search(text) else "medium"
            campaigns = sorted({c.name for c in finder.find(text)})
            return PainPoint(name, severity, campaigns, sources=[sentence])
    return None


def _named_problem(sentence: Sentence, finder: MentionFinder) -> PainPoint | None:
    """A problem the user names without a complaint cue: a thing called bad ("the demos are
    garbage"), or a phrase that is a problem by its first word ("junk calls again")."""
    text = sentence.text
    bad = _BAD_THING.search(text.split(",")[-1].strip()) or _BAD_THING.search(text)
    name = noun_phrase(bad.group("about").split(",")[-1], max_words=5, min_words=2) if bad else None
    if name is None and (m := _PROBLEM_NOUN.search(text)):
        name = noun_phrase(m.group("name"), max_words=3, min_words=2)
    if name is None:
        return None
    name = name[0].upper() + name[1:]
    severity = "high" if SEVERE.search(text) else "medium"
    campaigns = sorted({c.name for c in finder.find(text)})
    return PainPoint(name, severity, campaigns, sources=[sentence])


def summary(p: PainPoint) -> str:
    text = p.sources[-1].excerpt
    return text if p.frequency == 1 else f"{text} (raised {p.frequency} times)"


def metadata(p: PainPoint) -> dict[str, object]:
    return {
        "severity": p.severity,
        "frequency": p.frequency,
        "resolved": False,
        "related_campaigns": p.campaigns,
    }
