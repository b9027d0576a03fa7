"""What the extraction stages need of storage: a narrow interface, so that how the store is
built (and who owns its index) can change without touching the stages."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from entity_memory.service.batch_upsert import UpsertStore
from entity_memory.storage.d1 import Statement
from entity_memory.storage.ledger_rows import ProcessedSession


class DocumentReader(Protocol):
    async def get_json_many(self, keys: Sequence[str]) -> Mapping[str, Any]: ...


class SessionStore(UpsertStore, Protocol):
    """The store as the stages use it: what a batch upsert needs (its clock, the index, the
    embedder for semantic resolution), and bulk reads of entity documents (known facts)."""

    kv: DocumentReader


class SessionLedger(Protocol):
    """The ledger as the stages use it: the session cursor, its statements, a plain write."""

    async def processed_session(self, user_id: str, session_id: str) -> ProcessedSession | None: ...

    def session_statement(
        self, user_id: str, session_id: str, content_hash: str, now: int, counts: dict[str, int]
    ) -> Statement: ...

    def pending_statement(
        self,
        user_id: str,
        session_id: str,
        extractor: str,
        content_hash: str,
        messages_json: str | None,
        ranges: Sequence[tuple[int, int]],
        reason: str,
        now: int,
        next_attempt_at: int,
    ) -> Statement: ...

    def clear_pending_statement(self, user_id: str, session_id: str) -> Statement: ...

    async def write(self, statements: Sequence[Statement]) -> None: ...
