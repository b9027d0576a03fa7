"""The extractor interface and the data that crosses it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

Role = Literal["user", "assistant", "system"]


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Role
    content: str = Field(max_length=100_000)


@dataclass(frozen=True)
class KnownEntity:
    """A stored entity the extractor should reuse by name instead of inventing a new one."""

    type: str
    id: str
    name: str
    aliases: tuple[str, ...] = ()


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0

    def add(self, other: Usage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens


@dataclass
class ExtractionResult:
    """Raw candidates as the extractor produced them (dicts in the SPEC's prompt shape:
    type, name, content, importance, metadata, optional aliases), before validation."""

    extractor: str
    candidates: list[dict[str, Any]] = field(default_factory=list)
    #: Items the extractor itself could not use (e.g. not an object), with a reason.
    rejected: list[dict[str, Any]] = field(default_factory=list)
    usage: Usage | None = None
    #: Why a fallback ran instead of the configured extractor, if one did.
    fallback_reason: str | None = None


class ExtractionError(Exception):
    """The extractor could not produce a result (timeout, HTTP error, unusable output)."""


class Extractor(Protocol):
    name: str

    async def extract(
        self, messages: list[Message], known: list[KnownEntity], now_ms: int
    ) -> ExtractionResult: ...
