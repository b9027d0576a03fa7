"""The session's text as grounding reads it: normalised (case, quotes, dashes, whitespace),
as words, and the names the user introduces as their own business; and where a long text
may be cut into slices that are read one at a time (grounding.py builds a session's context
in bounded steps) with the same result as reading it whole.

Pure functions over plain text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

#: Characters of a message normalised in one step of building a context; a step ends at
#: whitespace, so the slices' normalised texts joined are the whole text's.
SLICE_CHARS = 8_000
_SPACE = re.compile(r"\s")


def slices(text: str) -> Iterator[str]:
    """`text` in consecutive slices of at least SLICE_CHARS (the last one shorter), each cut
    just before a whitespace character (a text without any is one slice)."""
    start = 0
    while start < len(text):
        cut = _SPACE.search(text, start + SLICE_CHARS) if start + SLICE_CHARS < len(text) else None
        end = len(text) if cut is None else cut.start()
        yield text[start:end]
        start = end


_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})
_DASHES = re.compile("[\u2010-\u2015\u2212]")
_WORDS = re.compile(r"[\W_]+")


def normalise_text(text: str) -> str:
    """Lowercase, curly quotes straight, dashes as '-', whitespace collapsed."""
    text = _DASHES.sub("-", text.translate(_QUOTES).lower())
    return " ".join(text.split())


def normalise_words(text: str) -> str:
    """Lowercase words only: punctuation to spaces, whitespace collapsed."""
    return " ".join(_WORDS.sub(" ", text.lower()).split())


def contains_words(haystack: str, needle: str) -> bool:
    """`needle` occurs in `haystack` as whole words (both normalised with `normalise_words`)."""
    return bool(needle) and f" {needle} " in f" {haystack} "


# --- the advertiser's own business ------------------------------------------------------------

_BUSINESS_NOUN = (
    r"(?:business|company|shop|store|agency|studio|firm|practice|clinic|salon|startup"
    r"|restaurant|caf[eé]|bakery|boutique|website|school|gym)"
)
_PROPER_WORD = r"[A-Z0-9](?:[\w&'+-]|\.(?=\w))*"
_PROPER = rf"{_PROPER_WORD}(?:\s+(?:&\s+)?{_PROPER_WORD}){{0,4}}"
BUSINESS_NAME_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(
        rf"\b(?:[Mm]y|[Oo]ur)\s+(?:\w+\s+){{0,2}}{_BUSINESS_NOUN},?\s+(?:is\s+|'s\s+)?"
        rf"(?:called\s+|named\s+)?(?P<name>{_PROPER})"
    ),
    re.compile(
        rf"\b(?:I|[Ww]e)\s+(?:run|own|operate|have|started|founded|manage)\s+(?:a|an)\s+"
        rf"(?:[\w-]+\s+){{0,3}}{_BUSINESS_NOUN}\s+(?:called|named)\s+(?P<name>{_PROPER})"
    ),
    re.compile(rf"\b(?:I|[Ww]e)\s+(?:own|founded)\s+(?P<name>{_PROPER})"),
    re.compile(rf"\b[Hh]ere at\s+(?P<name>{_PROPER})"),
    # A self-introduction: "This is Ana from X", "Ana from X here", "Ana from X." at the start.
    re.compile(
        rf"(?:^|[.!?]\s+|\b[Tt]his is\s+|\bI'm\s+|\bI am\s+)[A-Z][a-z]+\s+(?:from|at)\s+"
        rf"(?P<name>{_PROPER})"
    ),
    re.compile(rf"\b[Aa]t\s+(?P<name>{_PROPER}),?\s+we\b"),
    re.compile(rf"\b(?P<name>{_PROPER})\s+is\s+(?:my|our)\s+(?:\w+\s+){{0,2}}{_BUSINESS_NOUN}\b"),
)
#: Leading words a pattern may catch that are not part of a name.
_NOT_NAME_START = frozenset({"i", "we", "a", "an", "the", "my", "our", "it", "this", "that"})


def names_in(text: str, pos: int, endpos: int) -> set[str]:
    names: set[str] = set()
    for pattern in BUSINESS_NAME_PATTERNS:
        for m in pattern.finditer(text, pos, endpos):
            words = normalise_words(m.group("name")).split()
            while words and words[0] in _NOT_NAME_START:
                words = words[1:]
            if words:
                names.add(" ".join(words))
    return names


def business_names(user_texts: Iterable[str]) -> set[str]:
    """Names the user introduces as their own business (normalised words)."""
    names: set[str] = set()
    for text in user_texts:
        names |= names_in(text, 0, len(text))
    return names


#: Where a text may be cut for the business patterns: before a sentence's end mark followed by
#: whitespace. No pattern's match holds one except as its first character (a name's "." is
#: always followed by a letter or digit), so none spans the cut, and the text after the cut
#: starts with a character no pattern reads past: each part finds what the whole text does.
_BUSINESS_CUT = re.compile(r"[.!?](?=\s)")


def business_parts(text: str) -> Iterator[tuple[int, int]]:
    """(pos, endpos) of consecutive parts of at least SLICE_CHARS, cut at `_BUSINESS_CUT` (a
    text with no sentence end is one part)."""
    start = 0
    while start < len(text):
        far = start + SLICE_CHARS
        cut = _BUSINESS_CUT.search(text, far) if far < len(text) else None
        end = len(text) if cut is None else cut.start()
        yield start, end
        start = end
