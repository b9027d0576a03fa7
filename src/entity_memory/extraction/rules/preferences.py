"""Preferences: only in the user's own words, and only with an explicit marker ("I prefer",
"always", "never", "please keep it", "don't ... without asking"). What the assistant says the
user likes is not evidence."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise

from entity_memory.domain.kinds import PREFERENCE
from entity_memory.extraction.base import KnownEntity
from entity_memory.extraction.rules.campaigns import clauses
from entity_memory.extraction.rules.detector import (
    Conversation,
    Detector,
    Naming,
    SentenceScope,
    latest_wins,
)
from entity_memory.extraction.rules.lexicon import (
    ACTION_VERBS,
    FUNCTION_WORDS,
    KEEP_HOW,
    NOT_A_STATEMENT,
    ONE_OFF_VERBS,
    PREFER_WORDS,
    PREFERENCE_CATEGORIES,
    PREFERENCE_CUE,
    REQUEST_WORDS,
    REVISION_CUE,
    STANDING_ALWAYS,
    STANDING_FORM,
    STANDING_MARK,
    STANDING_REQUEST,
    STANDING_TOPIC,
    WORKING_TOPIC,
)
from entity_memory.extraction.rules.names import action_phrase, words
from entity_memory.extraction.rules.sentences import Sentence


@dataclass
class Preference:
    name: str
    value: str
    category: str
    sources: list[Sentence] = field(default_factory=list)


def detect(sentence: Sentence) -> Preference | None:
    text = sentence.text
    if sentence.role != "user":
        return None
    if NOT_A_STATEMENT.search(text) and not STANDING_REQUEST.search(text):
        return None
    m = PREFERENCE_CUE.search(text)
    if not m:
        return _standing(sentence)
    cue = m.group(0).lower()
    if cue in ("always", "never") and not STANDING_ALWAYS.search(text):
        return None
    stated = text[m.start() :]
    end = next((e for s, e in clauses(stated) if e - s > len(m.group(0)) + 2), len(stated))
    stated = stated[:end].strip().rstrip(".!")
    preferred = PREFER_WORDS.sub("", stated)
    if preferred != stated and preferred.split(" ", 1)[0].lower() in ACTION_VERBS:
        return None  # "I'd rather move that money to X" is a wish about one change, not a habit
    name = action_phrase(preferred, max_words=8, needs_object=False)
    if name is None:
        return None
    category = next((c for c, p in PREFERENCE_CATEGORIES if p.search(stated)), "communication")
    return Preference(name, stated[:300], category, [sentence])


def _standing(sentence: Sentence) -> Preference | None:
    """A standing instruction without an explicit cue: a request or rule (STANDING_FORM) that
    holds beyond this once (STANDING_MARK) about how the user works with the assistant
    (STANDING_TOPIC), in the same clause."""
    for start, end in clauses(sentence.text):
        clause = sentence.text[start:end].strip().rstrip(".!?")
        form, topic = STANDING_FORM.search(clause), STANDING_TOPIC.search(clause)
        if not form or not topic or not STANDING_MARK.search(clause):
            continue
        if form.group(0).lower() in ("always", "never") and not STANDING_ALWAYS.search(clause):
            continue
        stated = clause[form.start() :] if form.start() < topic.start() else clause
        stated = REQUEST_WORDS.sub("", PREFER_WORDS.sub("", stated))
        verb = stated.split(" ", 1)[0].lower()
        how = KEEP_HOW.match(stated) or WORKING_TOPIC.search(stated)
        if verb in ACTION_VERBS | ONE_OFF_VERBS and not how:
            continue  # "can you give X more budget": one change asked for, a decision's matter
        name = action_phrase(stated, max_words=8, needs_object=False) or action_phrase(
            clause, max_words=8, needs_object=False
        )
        if name is None:
            continue
        category = next((c for c, p in PREFERENCE_CATEGORIES if p.search(clause)), "communication")
        return Preference(name, clause[:300], category, [sentence])
    return None


def revises(p: Preference, known: list[KnownEntity]) -> str | None:
    """The stored preference a revision replaces: the one known preference of its category
    whose name shares a pair of content words with it ("weekly report"), where the user says
    it replaces something ("instead", "moved", "no longer")."""
    if not REVISION_CUE.search(p.sources[-1].text):
        return None
    mine = _pairs(p.name) | _pairs(p.value)
    matches = [
        k.name
        for k in known
        if k.type == PREFERENCE.type
        and k.facts.get("category") in (None, p.category)
        and _pairs(k.name) & mine
    ]
    return matches[0] if len(matches) == 1 else None


def settle(facts: dict[str, Preference]) -> dict[str, Preference]:
    """A preference the session revises ("the weekly report on Fridays instead") takes the
    place of the one it revises, under that one's name: one preference, its latest value."""
    out: dict[str, Preference] = {}
    for key, p in facts.items():
        earlier = [
            KnownEntity(type=PREFERENCE.type, id=k, name=q.name, facts={"category": q.category})
            for k, q in out.items()
        ]
        revised = revises(p, earlier)
        kept = next((k for k in out if out[k].name == revised), None)
        if kept is None:
            out[key] = p
            continue
        name = out[kept].name
        latest_wins(out[kept], p)
        out[kept].name = name
    return out


def _pairs(text: str) -> set[tuple[str, str]]:
    ws = [w.lower() for w in words(text)]
    return {(a, b) for a, b in pairwise(ws) if not {a, b} & FUNCTION_WORDS}


def summary(p: Preference) -> str:
    return p.value[0].upper() + p.value[1:] + "."


def metadata(p: Preference) -> dict[str, object]:
    return {"category": p.category, "value": p.value, "confidence": 0.9}


class PreferenceDetector(Detector[Preference]):
    """Standing instructions in the user's words."""

    kind = PREFERENCE

    def in_sentence(self, scope: SentenceScope) -> list[Preference]:
        p = detect(scope.sentence)
        return [p] if p else []

    def in_conversation(self, conversation: Conversation) -> list[Preference]:
        return []

    settle = staticmethod(settle)
    merge = staticmethod(latest_wins)
    summary = staticmethod(summary)
    metadata = staticmethod(metadata)

    def stored_name(self, fact: Preference, naming: Naming, others: list[str]) -> str | None:
        """The one stored under its name, else the stored preference it revises."""
        return naming.stored(PREFERENCE.type, fact.name, *others) or revises(fact, naming.known)


DETECTOR = PreferenceDetector()
