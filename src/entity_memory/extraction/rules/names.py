"""What may be a name: a short noun phrase that ends on a content word.

Names are never cut out of a sentence at an arbitrary length: a phrase is taken up to a clause
boundary and then must pass `well_formed`; when it does not, the caller stores nothing.
"""

from __future__ import annotations

from entity_memory.extraction.rules.lexicon import (
    ACTION_VERBS,
    COMMON_VERBS,
    FUNCTION_WORDS,
    LEADING_WORDS,
    NAME_VERBS,
    PHRASE_STOPS,
    PRONOUNS,
    STATE_CHANGE_VERBS,
    VAGUE,
)
from entity_memory.extraction.rules.lexicon.shapes import MARKUP, PHRASE_WORD

MAX_NAME_WORDS = 6


def words(text: str) -> list[str]:
    return PHRASE_WORD.findall(text)


def _bare(word: str) -> str:
    return word.lower().strip(".'\u2019")


def acronym(word: str) -> bool:
    """A word in capitals ("US", "UK", "B2B"): a code or an abbreviation, never the function
    word it spells ("Pet Cover - US" ends on a country, not on "us")."""
    letters = word.strip(".,'\u2019")
    return len(letters) >= 2 and letters.isupper()


def well_formed(name: str) -> bool:
    """True for a name a person would write: 1-8 words, no clause verb, not ending on a
    function word, balanced quotes and brackets, no markup, no dangling punctuation."""
    raw = name.split()
    ws = [_bare(w) for w in raw]
    if not ws or len(ws) > 8 or not any(ch.isalnum() for ch in name):
        return False
    ends_on_function = ws[-1] in FUNCTION_WORDS and not acronym(raw[-1])
    if ends_on_function or ws[0] in {"and", "or", "but", "to", "of"}:
        return False
    if any(w in NAME_VERBS for w in ws):
        return False
    if name.count("(") != name.count(")") or name.count('"') % 2 or MARKUP.search(name):
        return False
    return not name.rstrip().endswith(("-", ",", ":", ";", "/", "&"))


def noun_phrase(text: str, max_words: int = MAX_NAME_WORDS, min_words: int = 1) -> str | None:
    """The noun phrase `text` starts with: leading determiners dropped, stopped at the first
    verb, preposition or conjunction. None when that is empty, too long or not well formed."""
    ws = words(text.split(",")[0].split(";")[0])
    while ws and _bare(ws[0]) in LEADING_WORDS:
        ws = ws[1:]
    phrase: list[str] = []
    for w in ws:
        if _bare(w) in PHRASE_STOPS:
            break
        phrase.append(w)
    if len(phrase) < min_words or len(phrase) > max_words or _bare(phrase[-1]) in VAGUE:
        return None
    name = " ".join(phrase).strip(".\u2019'")
    return name if well_formed(name) else None


def _phrase_end(ws: list[str], limit: int) -> int:
    """Where a phrase longer than `limit` words may end: before the last preposition or
    conjunction within the limit, so it ends on a complete phrase ("raise X to $45/day")."""
    ends = [i for i in range(2, min(limit, len(ws) - 1) + 1) if _bare(ws[i]) in PHRASE_STOPS]
    return ends[-1] if ends else 0


def _without_old_state(ws: list[str]) -> list[str]:
    """The words of "switch X from A to B" without "from A": what it became is the decision;
    what it was is not (the action and the excerpt keep it)."""
    low = [_bare(w) for w in ws]
    if low[0] not in STATE_CHANGE_VERBS or "from" not in low:
        return ws
    start = low.index("from")
    if "to" not in low[start + 2 : -1]:
        return ws
    to = low.index("to", start + 2)
    after = ws[to + 1]
    if not after[0].isupper() and (low[to + 1] in ACTION_VERBS or low[to + 1] in COMMON_VERBS):
        return ws  # "to cut ...": a purpose; "to Target CPA", "to $1.60": the new state
    return ws[:start] + ws[to:]


def action_phrase(text: str, max_words: int = 8, *, needs_object: bool = True) -> str | None:
    """A decision's action or a stated preference as a name: the phrase up to the clause end;
    a longer one drops a change's old state ("from A") first, then ends before its last
    preposition within `max_words`, never mid-phrase."""
    ws = words(text)
    if not needs_object:
        while ws and _bare(ws[0]) in LEADING_WORDS:
            ws = ws[1:]
    if not ws or _bare(ws[0]) in FUNCTION_WORDS:
        return None
    for i, w in enumerate(ws):
        if _bare(w) in NAME_VERBS:
            ws = ws[:i]
            break
    if len(ws) > max_words:
        ws = _without_old_state(ws)
    if len(ws) > max_words:
        ws = ws[: _phrase_end(ws, max_words)]
    while ws and _bare(ws[-1]) in FUNCTION_WORDS:
        ws = ws[:-1]
    if needs_object and any(_bare(w) in VAGUE | PRONOUNS for w in ws[1:3]):
        return None  # "keep it running": what "it" is, the sentence does not say
    if len(ws) < 2 or len(ws) > max_words:
        return None
    name = " ".join(ws).rstrip(".!")
    name = name[0].upper() + name[1:]
    return name if well_formed(name) else None
