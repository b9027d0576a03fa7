"""Stage 6, upsert: one batch upsert of the resolved items carrying the ledger rows; when
there is nothing to store the ledger rows are still written (the session was read)."""

from __future__ import annotations

from collections.abc import Sequence

from entity_memory.domain.models import EntityIndex, EntityInputBase
from entity_memory.service.batch_upsert import UpsertResult, upsert_batch
from entity_memory.service.extraction.ports import SessionLedger, SessionStore
from entity_memory.service.extraction.resolve_candidates import novelty
from entity_memory.service.extraction.stage_data import LedgerRows


async def upsert(
    store: SessionStore,
    ledger: SessionLedger | None,
    user_id: str,
    session_id: str,
    items: Sequence[EntityInputBase],
    index: EntityIndex,
    rows: LedgerRows,
) -> list[UpsertResult]:
    upserted = await upsert_batch(
        store,
        user_id,
        items,
        session_id,
        index=index,
        adjust=novelty,
        ledger_extra=rows.statements,
    )
    if not items and ledger is not None:
        await ledger.write(rows.statements)
    return upserted
