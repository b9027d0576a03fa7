"""What a typed LLM pass asks of one kind: the base of a kind's compact item model.

A small model writes every token at a cost, and each key it writes is a chance to wander, so a
typed pass asks for one kind only, with just the fields that kind needs (`quote` first, so the
facts follow from the words copied). Each kind declares its item model next to its other
models (domain/kinds/) and says how an item becomes a candidate's name, content and metadata;
the pass itself (extraction/llm/typed.py, typed_items.py) asks the kind.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

QUOTE_CHARS = 240
NAME_CHARS = 60
PHRASE_CHARS = 120
#: Words of a decision's action (or a preference) kept in its name.
NAME_WORDS = 8

Quote = Annotated[str, Field(max_length=QUOTE_CHARS)]
ShortName = Annotated[str, Field(max_length=NAME_CHARS)]
Phrase = Annotated[str, Field(max_length=PHRASE_CHARS)]


class LlmItem(BaseModel):
    """One item of a typed pass's reply."""

    model_config = ConfigDict(extra="ignore")
    #: The item field a rules candidate's name is offered in (None: its name is not offered).
    named_by: ClassVar[str | None] = None
    #: Metadata fields offered under another item key (stored name -> item key).
    offered_as: ClassVar[dict[str, str]] = {}

    quote: Quote

    def fields(self, quote: str) -> tuple[str, str, dict[str, Any]]:
        """The candidate's name, content and metadata (before empty values are dropped)."""
        raise NotImplementedError


_UNIT = re.compile(r"(?P<usd>\$)|(?P<pct>%)|(?P<x>\d\s?x\b)")


def unit_in(quote: str) -> str | None:
    m = _UNIT.search(quote)
    if m is None:
        return None
    return "USD" if m.group("usd") else "%" if m.group("pct") else "x"


def short(text: str, words: int = NAME_WORDS) -> str:
    parts = text.strip().rstrip(".").split()
    return " ".join(parts[:words])
