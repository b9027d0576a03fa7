"""The ledger's session rows, typed: what `Ledger` reads back from D1 about a session.

`processed_sessions` is a session's read cursor, `pending_sessions` the messages an LLM still
owes of it; the extraction stages (service/extraction/plan.py) and the scheduled retry
(service/retry_pending.py) read them through these models, never as raw rows.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, JsonValue

Range = tuple[int, int]


class _Row(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class PendingPart(_Row):
    """The pending row of a session, as joined to its cursor."""

    ranges: list[Range]
    content_hash: str | None = None
    attempts: int = 0
    extractor: str | None = None


class ProcessedSession(_Row):
    """How far a session was read, and what of it is still pending."""

    content_hash: str
    processed_at: int
    counts: dict[str, int]
    pending: PendingPart | None = None


class PendingSession(_Row):
    """A session an LLM still owes messages of (a `pending_sessions` row)."""

    user_id: str
    session_id: str
    extractor: str
    content_hash: str
    #: The session's messages; None when they were too large to keep (only a re-send retries).
    messages: list[dict[str, JsonValue]] | None
    ranges: list[Range]
    reason: str
    attempts: int
    next_attempt_at: int
    created_at: int
    updated_at: int
