"""Pain points: explicit complaints in the user's own words ("I'm frustrated that ...", "the
problem is ...", "... keeps happening"). The name is what the complaint is about, as a noun
phrase; a complaint about "it" or "this" names nothing, so it is not stored.

A problem the conversation later says is over ("the spam sign-ups are gone", "nobody has
complained about fake leads in a month"), by the user or in the assistant's report, is stored
resolved: a clause with a resolution cue that names the problem (its name, or its name without
the problem word when two words are left: "sign-up forms" of "spam sign-up forms"). Such a
clause is never a new complaint."""

from __future__ import annotations

from dataclasses import dataclass, field

from entity_memory.domain import pacing
from entity_memory.domain.kinds import PAIN_POINT
from entity_memory.domain.pacing import Steps
from entity_memory.domain.text import normalize_name
from entity_memory.extraction.rules.campaigns import clause_at
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
    NOT_RESOLVED,
    PROBLEM_NOUN,
    PROBLEM_WORD,
    QUALIFIER,
    RESOLVED_CUE,
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
    #: Said to be over; a resolution alone (of a problem stored earlier) states nothing else.
    resolved: bool = False
    complaint: bool = True


def detect(sentence: Sentence, finder: MentionFinder) -> PainPoint | None:
    """The complaint the sentence makes, unless the sentence says that problem is over."""
    p = _complaint(sentence, finder)
    return None if p is None or resolves(sentence.text, p.name) else p


def _complaint(sentence: Sentence, finder: MentionFinder) -> PainPoint | None:
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


def _phrases(name: str) -> list[str]:
    """How a clause names the problem `name`: whole, or without its problem word when two
    words are left ("search terms" of "irrelevant search terms")."""
    ws = normalize_name(name).split()
    out = [" ".join(ws)]
    if len(ws) > 2 and PROBLEM_WORD.match(ws[0]):
        out.append(" ".join(ws[1:]))
    return out


def _resolved_clauses(text: str) -> list[str]:
    """The clauses of `text` that say something is over (not only hoped or supposed),
    normalised, a space each side."""
    clauses = []
    for cue in RESOLVED_CUE.finditer(text):
        start, end = clause_at(text, cue.start())
        if not NOT_RESOLVED.search(text, start, cue.start()):
            clauses.append(f" {normalize_name(text[start:end])} ")
    return clauses


def _names_over(clauses: list[str], phrases: list[str]) -> bool:
    return any(f" {phrase} " in clause for clause in clauses for phrase in phrases)


def resolves(text: str, name: str) -> bool:
    """A clause of `text` says the problem `name` is over (and not only hoped or supposed)."""
    return _names_over(_resolved_clauses(text), _phrases(name))


def resolution_steps(conversation: Conversation) -> Steps[list[PainPoint]]:
    """The problems, stored or complained about earlier in the session, that a later sentence
    says are over; a sentence a step. A sentence's clauses are read once, not once per
    problem named so far (a long session of complaints made that quadratic)."""
    names = [k.name for k in conversation.known if k.type == PAIN_POINT.type]
    names += [a for k in conversation.known if k.type == PAIN_POINT.type for a in k.aliases]
    phrases = {name: _phrases(name) for name in names}
    out: list[PainPoint] = []
    for s in conversation.sentences:
        if (p := _complaint(s, conversation.finder)) is not None and p.name not in phrases:
            names.append(p.name)
            phrases[p.name] = _phrases(p.name)
        if not NOT_A_STATEMENT.search(s.text) and RESOLVED_CUE.search(s.text):
            clauses = _resolved_clauses(s.text)
            for name in names:
                if _names_over(clauses, phrases[name]):
                    out.append(
                        PainPoint(name, "medium", [], 1, [s], resolved=True, complaint=False)
                    )
        yield len(s.text)
    return out


def summary(p: PainPoint) -> str:
    if p.resolved and not p.complaint:
        return f"Resolved: {p.sources[-1].excerpt}"
    text = p.sources[0].excerpt if p.resolved else p.sources[-1].excerpt
    text = text if p.frequency == 1 else f"{text} (raised {p.frequency} times)"
    return f"{text} Resolved: {p.sources[-1].excerpt}" if p.resolved else text


def metadata(p: PainPoint) -> dict[str, object]:
    if not p.complaint:
        return {"resolved": True}  # the stored complaint's severity and campaigns stand
    return {
        "severity": p.severity,
        "frequency": p.frequency,
        "resolved": p.resolved,
        "related_campaigns": p.campaigns,
    }


def _order(s: Sentence) -> tuple[int, int]:
    return (s.turn, s.position)


def merge(into: PainPoint, new: PainPoint) -> None:
    """The same complaint again: counted, and high once it was said with force. Said to be
    over after its last complaint: resolved; complained about again after that: open."""
    if not new.complaint:
        if into.complaint and max(map(_order, into.sources)) > _order(new.sources[0]):
            return  # resolved earlier in the session, then complained about again
        into.resolved = True
        into.sources = add_sources(into.sources, new.sources)
        return
    into.resolved = False
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
        return pacing.run(resolution_steps(conversation))

    def conversation_steps(self, conversation: Conversation) -> Steps[list[PainPoint]]:
        return resolution_steps(conversation)

    settle = staticmethod(as_found)
    merge = staticmethod(merge)
    summary = staticmethod(summary)
    metadata = staticmethod(metadata)


DETECTOR = PainPointDetector()
