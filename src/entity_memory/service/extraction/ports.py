"""What the extraction stages need of storage: a narrow interface, so that how the store is
built (and who owns its index) can change without touching the stages."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from entity_memory.domain.models import EntityIndex, EntityInputBase
from entity_memory.embeddings.embedder import Embedder
from entity_memory.storage.d1 import Statement
from entity_memory.storage.ledger_rows import ProcessedSession
from entity_memory.storage.store import Adjust, UpsertResult


class DocumentReader(Protocol):
    async def get_json_many(self, keys: Sequence[str]) -> Mapping[str, Any]: ...


class SessionStore(Protocol):
    """The store as the stages use it: its clock, the index, bulk reads of entity documents
    (known facts), the embedder (semantic resolution) and the batch upsert."""

    kv: DocumentReader
    embedder: Embedder | None

    def clock(self) -> int: ...

    async def read_index(self, user_id: str) -> EntityIndex: ...

    async def upsert_many(
        self,
        user_id: str,
        items: Sequence[EntityInputBase],
        session_id: str,
        *,
        index: EntityIndex | None = None,
        adjust: Adjust | None = None,
        ledger_extra: Sequence[Statement] = (),
    ) -> list[UpsertResult]: ...


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
