"""Stored text made inert inside the `<entity_memory>` fence: one line, nothing a reader could
take for the fence's own tags, and no character that hides or reorders text.

The block an agent injects is `<entity_memory>` ... `</entity_memory>`; whatever a stored name
or sentence says sits between, as data. A model does not read tags the way a parser does: to
it `</entity_memory x=1>`, `</entity-memory>`, `<entity_memory/>`, a Cyrillic `\u0435` in the name,
fullwidth brackets or a zero-width space inside the tag all close the fence. So tags are found
on a skeleton of the text that folds what a reader would not see or would read alike, and the
whole tag is replaced in the original:

- invisible characters (format controls such as the zero-width space, soft hyphen, word joiner
  and bidi overrides; controls such as NUL; combining marks; fillers that render as nothing)
  are dropped;
- compatibility forms are folded (NFKD: fullwidth `\uff1c`, small `\ufe64`, mathematical letters),
  case is folded, and letters of other scripts that look Latin (Cyrillic `\u0435`, Greek `\u03bf`,
  small capitals) are read as the Latin letter, as are look-alike angle brackets and slashes;
- a tag is a `<` (or `&lt;`, `\\u003c`), an optional `/`, then `entity` and `memory` with up
  to a few separators between (`_`, `-`, a space), then anything up to its `>` (attributes,
  a self-closing `/`); an opener with no `>` is a tag too.

What is printed keeps the original text (a campaign named in Cyrillic stays Cyrillic), minus
the characters that are never printed: controls and format characters (NUL, bidi overrides,
zero-width spaces), except the joiners some scripts and emoji need.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

#: What a tag look-alike is replaced with: no angle bracket, and not the name (after a stray
#: `<` the name would start a tag again).
REPLACEMENT = "[removed tag]"

#: Format characters kept in printed text: zero-width non-joiner and joiner (Persian, Indic
#: scripts, emoji sequences). Dropped from the skeleton like every other invisible one.
_KEPT_FORMAT = frozenset("\u200c\u200d")
#: Characters that render as nothing though they are letters or symbols (Hangul fillers,
#: the braille blank, the Mongolian vowel separator).
_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800\u180e")
#: Letters and signs a reader takes for the ASCII ones of a tag, after NFKD and casefolding.
_CONFUSABLES = str.maketrans(
    {
        # e
        "\u0435": "e", "\u0450": "e", "\u0451": "e", "\u04bd": "e", "\u04bf": "e",
        "\u03b5": "e", "\u0454": "e", "\u0501": "e", "\u1d07": "e", "\u212e": "e",
        "\u0259": "e", "\u01dd": "e", "\u13ac": "e", "\uab7c": "e",
        # n
        "\u043f": "n", "\u03b7": "n", "\u0578": "n", "\u0274": "n", "\u057c": "n",
        # t
        "\u0442": "t", "\u03c4": "t", "\u1d1b": "t", "\u13a2": "t", "\uab72": "t",
        # i
        "\u0456": "i", "\u0457": "i", "\u03b9": "i", "\u0131": "i", "\u026a": "i",
        "\u1fbe": "i", "\u13a5": "i", "\uab75": "i", "\u04cf": "i",
        # y
        "\u0443": "y", "\u04af": "y", "\u03b3": "y", "\u03c5": "y", "\u028f": "y",
        "\u13a9": "y", "\uab79": "y", "\u1eff": "y",
        # m
        "\u043c": "m", "\u03bc": "m", "\u1d0d": "m", "\u13b7": "m", "\uab87": "m",
        # o
        "\u043e": "o", "\u03bf": "o", "\u03c3": "o", "\u0585": "o", "\u1d0f": "o",
        "\u2c9f": "o", "\u0ce6": "o", "\u0d66": "o",
        # r
        "\u0433": "r", "\u0280": "r", "\u1d26": "r", "\u13d2": "r", "\uab81": "r",
        # <
        "\u2039": "<", "\u3008": "<", "\u27e8": "<", "\u276e": "<", "\u02c2": "<",
        "\u1438": "<", "\u2329": "<", "\u276c": "<", "\u29fc": "<", "\u22d6": "<",
        "\u227a": "<", "\u00ab": "<",
        # >
        "\u203a": ">", "\u3009": ">", "\u27e9": ">", "\u276f": ">", "\u02c3": ">",
        "\u1433": ">", "\u232a": ">", "\u276d": ">", "\u29fd": ">", "\u22d7": ">",
        "\u227b": ">", "\u00bb": ">",
        # /
        "\u2044": "/", "\u2215": "/", "\u29f8": "/", "\u2571": "/", "\u30ce": "/",
        "\u4e3f": "/", "\u2cc6": "/",
    }
)  # fmt: skip
_OPEN = r"(?:<|&lt;?|&#0*60;?|&#x0*3c;?|\\u003c|\\x3c|%3c)"
_CLOSE = r"(?:>|&gt;?|&#0*62;?|&#x0*3e;?|\\u003e|\\x3e|%3e)"
#: ASCII characters read as a letter of the tag's name ("ent1ty_mem0ry").
_ASCII_ALIKES = {"e": "e3", "i": "i1l|!", "o": "o0"}
_NAME = (
    "".join(f"[{re.escape(_ASCII_ALIKES[c])}]" if c in _ASCII_ALIKES else c for c in "entity")
    + "[^a-z0-9<>]{0,5}"
    + "".join(f"[{re.escape(_ASCII_ALIKES[c])}]" if c in _ASCII_ALIKES else c for c in "memory")
)
#: A fence tag on the skeleton: opener, optional slash, the name with up to five separators
#: in it, then its attributes and end if it has one within a line's reach.
_TAG = re.compile(_OPEN + r"[^a-z0-9<>]{0,5}" + _NAME + r"(?:[^<>]{0,200}?" + _CLOSE + ")?")
_WHITESPACE = re.compile(r"\s+")


def _unprinted(char: str) -> bool:
    """Never printed into the block: controls, format characters (but the joiners), lone
    surrogates, and noncharacters (whitespace is folded before this is asked)."""
    category = unicodedata.category(char)
    if category == "Cf":
        return char not in _KEPT_FORMAT
    return category in ("Cc", "Cs") or (category == "Cn" and (ord(char) & 0xFFFE) == 0xFFFE)


def _skeleton(char: str) -> str:
    """How a reader sees one character of a possible tag ("" for an invisible one)."""
    if char in _KEPT_FORMAT or char in _BLANK_LETTERS:
        return ""
    folded = "".join(c for c in unicodedata.normalize("NFKD", char) if not unicodedata.combining(c))
    return folded.casefold().translate(_CONFUSABLES)


def _tag_spans(text: str) -> list[tuple[int, int]]:
    """The (start, end) of every fence-tag look-alike in `text`."""
    if text.isascii():
        skeleton, origin = text.lower().translate(_CONFUSABLES), None
    else:
        parts, positions = [], []
        for index, char in enumerate(text):
            seen = _skeleton(char)
            parts.append(seen)
            positions.extend([index] * len(seen))
        skeleton, origin = "".join(parts), positions
    spans = []
    for match in _TAG.finditer(skeleton):
        start, end = match.span()
        if origin is not None:
            start, end = origin[start], origin[end - 1] + 1
        spans.append((start, end))
    return spans


def neutralise(text: Any) -> str:
    """Stored text as inert data: one line, no fence-tag look-alike, nothing unprinted."""
    flat = _WHITESPACE.sub(" ", str(text))
    printed = "".join(c for c in flat if not _unprinted(c)).strip()
    spans = _tag_spans(printed)
    if not spans:
        return printed
    out, last = [], 0
    for start, end in spans:
        out.append(printed[last:start])
        out.append(REPLACEMENT)
        last = end
    out.append(printed[last:])
    return "".join(out)
