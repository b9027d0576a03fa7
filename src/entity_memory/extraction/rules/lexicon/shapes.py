"""The shapes the rules read that no language owns: punctuation, bullets, table layout."""

from __future__ import annotations

import re

#: A sentence ends at . ! ? followed by a space (people type lowercase sentences too); a decimal
#: point ("3.1") is never followed by a space.
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")
#: A list item's marker ("- ", "* ", "2) ").
BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
#: A word of a name or a phrase, with the signs names carry ("$40/day", "A&B", "Q3-Promo").
PHRASE_WORD = re.compile(r"[\w$%'\u2019.&+/-]+")
#: A word, for looking names up by their word n-grams.
WORD_SPAN = re.compile(r"\w+")
#: Where a structured campaign name's first part ends ("Lotus Mats - All Sizes").
NAME_PARTS = re.compile(r"\s+[-\u2013|:]\s+")
#: A markdown table's separator row ("|---|:---:|").
TABLE_SEPARATOR = re.compile(r"^\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$")
#: Markup ("<img src=x>", "</b>"): a name never holds it.
MARKUP = re.compile(r"[<>]")
#: A table row's label with what it is of in brackets ("CPA (Lotus)", "Cost per sale (EU)").
LABEL_QUALIFIER = re.compile(r"^(?P<label>[^()]+?)\s*\((?P<of>[^()]+)\)\s*$")
