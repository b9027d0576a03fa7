"""The typed data passed between the extraction stages."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from entity_memory.domain.models import EntityIndex, EntityInputBase
from entity_memory.extraction.base import ChunkFailure, KnownEntity, Message, Usage
from entity_memory.storage.d1 import Statement
from entity_memory.storage.ledger_rows import ProcessedSession

Range = tuple[int, int]


class _Stage(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)


class SessionRequest(_Stage):
    """What the caller asks: extract this session of this user with this extractor."""

    user_id: str
    session_id: str
    messages: list[Message]
    #: The extractor the request names (None: the deployment's).
    requested: str | None = None
    #: The session's own time for the prompt's date (a pending session retried later).
    session_now: int | None = None


class PendingRanges(_Stage):
    """Messages of a session an LLM still owes (a `pending_sessions` row)."""

    ranges: list[Range]
    attempts: int = 0
    extractor: str | None = None


class SessionCursor(_Stage):
    """How far a session was read (a `processed_sessions` row) and what of it is pending."""

    content_hash: str
    messages_read: int
    pending: PendingRanges | None = None

    @classmethod
    def from_row(cls, row: ProcessedSession | None) -> SessionCursor | None:
        if row is None:
            return None
        pending = row.pending
        return cls(
            content_hash=row.content_hash,
            messages_read=row.counts.get("messages", 0),
            pending=None
            if pending is None
            else PendingRanges(
                ranges=list(pending.ranges),
                attempts=pending.attempts,
                extractor=pending.extractor,
            ),
        )


class Plan(_Stage):
    """What to extract: the ranges of messages, and what the ledger said about the session."""

    extractor: str
    is_llm: bool
    #: Messages already read (a prefix of the session with the same hash).
    done: int
    ranges: list[Range]
    #: The pending row of the session, when it is still valid for these messages.
    prior: PendingRanges | None = None
    #: The session had a pending row (valid or not), to clear once nothing is owed.
    had_pending: bool = False

    @property
    def nothing_new(self) -> bool:
        return not self.ranges


class Extracted(_Stage):
    """What the extractor produced over the plan's ranges (positions in the session)."""

    extractor: str
    candidates: list[dict[str, Any]] = Field(default_factory=list)
    rejected: list[dict[str, Any]] = Field(default_factory=list)
    failures: list[ChunkFailure] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    calls: int = 0
    #: Replies cut off at their budget (their complete items were kept).
    truncated: int = 0
    #: (type, id) of the known entities a model was shown (ExtractionResult.shown).
    shown: set[tuple[str, str]] = Field(default_factory=set)


class Checked(_Stage):
    """Candidates that passed schema validation and grounding, and why the others did not."""

    inputs: list[EntityInputBase]
    rejected: list[dict[str, Any]]
    #: Fields removed from kept candidates (`FieldDrop.to_json_dict`): what and why.
    dropped: list[dict[str, Any]] = Field(default_factory=list)


class Known(_Stage):
    """The user's index and the known entities an extractor is shown."""

    index: EntityIndex
    entities: list[KnownEntity]


class LedgerRows(_Stage):
    """The ledger statements of one extraction, written with the upsert (one D1 batch)."""

    statements: list[Statement]
    counts: dict[str, int]
    owed: list[Range]
