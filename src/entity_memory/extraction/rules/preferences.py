"""Preferences: only in the user's own words, and only with an explicit marker ("I prefer",
"always", "never", "please keep it", "don't ... without asking"). What the assistant says the
user likes is not evidence."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from entity_memory.extraction.rules.campaigns import clauses
from entity_memory.extraction.rules.names import action_phrase
from entity_memory.extraction.rules.patterns import (
    ACTION_VERBS,
    NOT_A_STATEMENT,
    PREFERENCE_CATEGORIES,
    PREFERENCE_CUE,
)
from entity_memory.extraction.rules.sentences import Sentence

#: "always"/"never" state a preference only as an instruction ("Always ask ...", "please never
#: ..."), not as a description ("it never loads").
_STANDING = re.compile(r"(?:^|[,;:]\s*|\b(?:I|we|please|you)\s+)(?:always|never)\b", re.I)
#: Cue words that are not part of what is preferred.
_PREFER = re.compile(
    r"^(?:I(?:'d| would)? prefer|I(?:'d| would) rather|I always want|from now on,?)\s+", re.I
)


@dataclass
class Preference:
    name: str
    value: str
    category: str
    sources: list[Sentence] = field(default_factory=list)


def detect(sentence: Sentence) -> Preference | None:
    text = sentence.text
    if sentence.role != "user" or NOT_A_STATEMENT.search(text):
        return None
    m = PREFERENCE_CUE.search(text)
    if not m:
        return None
    cue = m.group(0).lower()
    if cue in ("always", "never") and not _STANDING.search(text):
        return None
    stated = text[m.start() :]
    end = next((e for s, e in clauses(stated) if e - s > len(m.group(0)) + 2), len(stated))
    stated = stated[:end].strip().rstrip(".!")
    preferred = _PREFER.sub("", stated)
    if preferred != stated and preferred.split(" ", 1)[0].lower() in ACTION_VERBS:
        return None  # "I'd rather move that money to X" is a wish about one change, not a habit
    name = action_phrase(preferred, max_words=8, needs_object=False)
    if name is None:
        return None
    category = next((c for c, p in PREFERENCE_CATEGORIES if p.search(stated)), "communication")
    return Preference(name, stated[:300], category, [sentence])


def summary(p: Preference) -> str:
    return p.value[0].upper() + p.value[1:] + "."


def metadata(p: Preference) -> dict[str, object]:
    return {"category": p.category, "value": p.value, "confidence": 0.9}
