"""The extractor interface and the data that crosses it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from entity_memory.domain.limits import MAX_MESSAGE_CHARS
from entity_memory.domain.models import IndexEntry

Role = Literal["user", "assistant", "system"]


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Role
    content: str = Field(max_length=MAX_MESSAGE_CHARS)


@dataclass(frozen=True)
class KnownEntity:
    """A stored entity the extractor should reuse by name instead of inventing a new one.

    `facts` are its current key facts (strategy, budget, value, target, ...) where the pipeline
    read them, so a model can report a change instead of restating; `entry` is its index entry,
    used to rank the known entities against each chunk. Neither takes part in equality.
    """

    type: str
    id: str
    name: str
    aliases: tuple[str, ...] = ()
    facts: Mapping[str, Any] = field(default_factory=dict, compare=False)
    entry: IndexEntry | None = field(default=None, compare=False, repr=False)


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0

    def add(self, other: Usage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens


@dataclass(frozen=True)
class ChunkFailure:
    """Messages `[start, end)` of the ones given to `extract` that could not be extracted."""

    start: int
    end: int
    reason: str


@dataclass
class ExtractionResult:
    """Raw candidates as the extractor produced them (dicts in the SPEC's prompt shape:
    type, name, content, importance, metadata, optional aliases and source), before validation.

    An LLM extractor works chunk by chunk: the candidates of the chunks that succeeded are here,
    the chunks that failed are in `failures` (the pipeline records them as pending)."""

    extractor: str
    candidates: list[dict[str, Any]] = field(default_factory=list)
    #: Items the extractor itself could not use (e.g. not an object), with a reason.
    rejected: list[dict[str, Any]] = field(default_factory=list)
    usage: Usage | None = None
    failures: list[ChunkFailure] = field(default_factory=list)
    #: Model calls made (retries and splits included).
    calls: int = 0
    #: Replies cut off at their output budget (their complete items kept).
    truncated: int = 0
    #: (type, id) of the known entities the model was shown: it chose a new name over these
    #: knowingly, so resolution does not fold a new name into one of them by meaning alone.
    shown: set[tuple[str, str]] = field(default_factory=set)


class ExtractionError(Exception):
    """The extractor could not produce a result (timeout, HTTP error, unusable output)."""


class ExtractorUnavailable(ExtractionError):
    """The extractor asked for has no backend here (no AI binding, no LLM_BASE_URL)."""


class Extractor(Protocol):
    name: str

    async def extract(
        self, messages: list[Message], known: list[KnownEntity], now_ms: int
    ) -> ExtractionResult: ...


class ContextualExtractor(Extractor, Protocol):
    """An extractor that also reads the session's earlier messages as read-only context (the
    LLM extractors: "do it" needs the proposal it accepts)."""

    async def extract(
        self,
        messages: list[Message],
        known: list[KnownEntity],
        now_ms: int,
        *,
        previous: Sequence[Message] = (),
    ) -> ExtractionResult: ...
