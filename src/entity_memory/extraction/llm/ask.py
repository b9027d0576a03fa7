"""One model request and its reply, as the backends see them (shared by every design)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from entity_memory.extraction.base import Usage

ChatMessages = list[dict[str, str]]

#: Repetition controls, passed where the server accepts them: without them a 1.5B model at
#: temperature 0 repeated one sentence until max_tokens; with them it did not (measured).
FREQUENCY_PENALTY = 0.3
REPEAT_PENALTY = 1.15


@dataclass(frozen=True)
class Ask:
    """One model request: the chat, the reply's JSON schema and its output budget."""

    messages: ChatMessages
    schema: dict[str, Any]
    schema_name: str
    max_tokens: int


@dataclass
class Reply:
    #: The model's output: text, or JSON a JSON-mode server already parsed.
    raw: Any
    usage: Usage | None = None
    #: finish_reason "length" (or the backend's equivalent).
    truncated: bool = False
