"""Pain points: explicit complaints in the user's own words ("I'm frustrated that ...", "the
problem is ...", "... keeps happening"). The name is what the complaint is about, as a noun
phrase; a complaint about "it" or "this" names nothing, so it is not stored."""

from __future__ import annotations

from dataclasses import dataclass, field

from entity_memory.domain.kinds import PAIN_POINT
from entity_memory.extraction.rules.detector import (
    Conversation,
    Detector,
    SentenceScope,
    as_found,
)
from entity_memory.extraction.rules.lexicon import (
    BAD_THING,
    COMPLAINT_CUE,
    COMPLAINT_NEGATED,
    COMPLAINT_OBJECTS,
    FUNCTION_WORDS,
    LEADING_WORDS,
    NOT_A_STATEMENT,
    PROBLEM_NOUN,
    QUALIFIER,
    SEVERE,
)
from entity_memory.extraction.rules.mentions import MentionFinder
from entity_memory.extraction.rules.names import noun_phrase, words
from entity_memory.extraction.rules.sentences import Sentence, add_sources, ends_before


@dataclass
class PainPoint:
    name: str
    severity: str
    campaigns: list[str]
    frequency: int = 1
    sources: list[Sentence] = field(default_factory=list)


def detect(sentence: Sentence, finder: MentionFinder) -> PainPoint | None:
    text = sentence.text
    if sentence.role != "user" or NOT_A_STATEMENT.search(text):
        return None
    cue = COMPLAINT_CUE.search(text)
    if cue is None:
        return _named_problem(sentence, finder)
    if ends_before(COMPLAINT_NEGATED, text, cue.start()):
        return None  # "I'm not worried about the CPC increase"
    for pattern in COMPLAINT_OBJECTS:
        m = pattern.search(text)
        # The object follows the cue ("frustrated that X, ..."), the subject precedes it
        # ("..., X keeps failing"): take the clause next to the cue.
        about = m.group(1).split(",") if m else []
        about_text = about[-1] if m and m.start(1) == 0 else (about[0] if about else "")
        about_text = about_text.split(":")[-1]  # "Issue one: the chat leads are useless"
        if m and (name := _complaint_name(about_text)):
            return _pain_point(name, sentence, finder)
    return None


def _complaint_name(about: str) -> str | None:
    """What a complaint is about, as a noun phrase of 2-5 words; a one-word head keeps the
    phrase that qualifies it ("calls from job seekers")."""
    name = noun_phrase(about, max_words=5, min_words=2)
    ws = [w for w in words(about) if w.lower() not in LEADING_WORDS]
    if name or not ws or ws[0].lower() in FUNCTION_WORDS:
        return name
    head = ws[0]
    rest = about[about.find(head) + len(head) :]
    qualifier = QUALIFIER.match(rest)
    tail = noun_phrase(rest[qualifier.end() :], max_words=3) if qualifier else None
    return f"{head} {qualifier.group(0).strip()} {tail}" if qualifier and tail else None


def _named_problem(sentence: Sentence, finder: MentionFinder) -> PainPoint | None:
    """A problem the user names without a complaint cue: a thing called bad ("the new leads
    are useless"), or an ad outcome a problem word qualifies ("spam leads, two more")."""
    text = sentence.text
    bad = BAD_THING.search(text.split(",")[-1].strip()) or BAD_THING.search(text)
    name = noun_phrase(bad.group("about").split(",")[-1], max_words=5, min_words=2) if bad else None
    if name is None and (m := PROBLEM_NOUN.search(text)):
        name = noun_phrase(m.group("name"), max_words=3, min_words=2)
    return None if name is None else _pain_point(name, sentence, finder)


def _pain_point(name: str, sentence: Sentence, finder: MentionFinder) -> PainPoint:
    """The pain point `name` the sentence states, with its severity and its campaigns."""
    text = sentence.text
    severity = "high" if SEVERE.search(text) else "medium"
    campaigns = sorted({c.name for c in finder.find(text)})
    return PainPoint(name[0].upper() + name[1:], severity, campaigns, sources=[sentence])


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


def merge(into: PainPoint, new: PainPoint) -> None:
    """The same complaint again: counted, and high once it was said with force."""
    into.frequency += 1
    if new.severity == "high":
        into.severity = "high"
    into.campaigns = sorted({*into.campaigns, *new.campaigns})
    into.sources = add_sources(into.sources, new.sources)


class PainPointDetector(Detector[PainPoint]):
    """Complaints in the user's words."""

    kind = PAIN_POINT

    def in_sentence(self, scope: SentenceScope) -> list[PainPoint]:
        p = detect(scope.sentence, scope.finder)
        return [p] if p else []

    def in_conversation(self, conversation: Conversation) -> list[PainPoint]:
        return []

    settle = staticmethod(as_found)
    merge = staticmethod(merge)
    summary = staticmethod(summary)
    metadata = staticmethod(metadata)


DETECTOR = PainPointDetector()
