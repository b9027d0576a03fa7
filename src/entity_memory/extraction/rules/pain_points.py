"""Pain points: explicit complaints in the user's own words ("I'm frustrated that ...", "the
problem is ...", "... keeps happening"). The name is what the complaint is about, as a noun
phrase; a complaint about "it" or "this" names nothing, so it is not stored."""

from __future__ import annotations

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


def detect(sentence: Sentence, finder: MentionFinder) -> PainPoint | None:
    text = sentence.text
    if sentence.role != "user" or NOT_A_STATEMENT.search(text) or not COMPLAINT_CUE.search(text):
        return None
    for pattern in COMPLAINT_OBJECTS:
        m = pattern.search(text)
        # The object follows the cue ("frustrated that X, ..."), the subject precedes it
        # ("..., X keeps failing"): take the clause next to the cue.
        about = m.group(1).split(",") if m else []
        about_text = about[-1] if m and m.start(1) == 0 else (about[0] if about else "")
        if m and (name := noun_phrase(about_text, max_words=5, min_words=2)):
            name = name[0].upper() + name[1:]
            severity = "high" if SEVERE.search(text) else "medium"
            campaigns = sorted({c.name for c in finder.find(text)})
            return PainPoint(name, severity, campaigns, sources=[sentence])
    return None


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
