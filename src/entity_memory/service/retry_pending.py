"""Scheduled: extract again the sessions an LLM failed on (pending in the ledger).

A failure is recorded with the session's messages and the ranges still owed; each cron run
takes the ones due (longest waiting first, a few per run so one run stays short) and runs the
normal pipeline over them, which extracts only the owed ranges and clears the row on success or
pushes its next attempt back (exponential, capped) on another failure.
"""

from __future__ import annotations

from typing import Any

from entity_memory.extraction.base import Message
from entity_memory.extraction.registry import ExtractorFactory, build_extractor
from entity_memory.service import writes
from entity_memory.service.bindings import Bindings
from entity_memory.service.extraction.pipeline import SessionExtraction
from entity_memory.service.extraction.request_errors import ExtractionRequestError
from entity_memory.service.extraction.session_cursor import PENDING_MAX_RETRY_MS
from entity_memory.service.stores import build_store
from entity_memory.service.writers import RemoteWriter, WriterRefused, WriterUnavailable
from entity_memory.service.writes import ExtractCall
from entity_memory.storage.ledger import Ledger
from entity_memory.storage.ledger_rows import PendingSession
from entity_memory.storage.store import EntityStore

MAX_SESSIONS_PER_RUN = 5


async def retry_pending_sessions(
    store: EntityStore,
    ledger: Ledger,
    bindings: Bindings,
    factory: ExtractorFactory = build_extractor,
    limit: int = MAX_SESSIONS_PER_RUN,
) -> dict[str, Any]:
    now = store.clock()
    due = await ledger.due_pending(now, limit)
    pipeline = SessionExtraction(store, ledger, bindings, factory)
    outcomes: list[dict[str, Any]] = []
    for row in due:
        if row.messages is None:  # too large to keep: only a re-send can retry it
            outcomes.append(await _postpone(ledger, row, now))
        elif bindings.writers is not None:
            outcomes.append(await _resend_through_writer(bindings, row))
        else:
            outcomes.append(await _run_here(pipeline, row))
    return {"due": len(due), "sessions": outcomes}


async def _postpone(ledger: Ledger, row: PendingSession, now: int) -> dict[str, Any]:
    statement = ledger.pending_statement(
        row.user_id,
        row.session_id,
        row.extractor,
        row.content_hash,
        None,
        row.ranges,
        row.reason,
        now,
        now + PENDING_MAX_RETRY_MS,
    )
    await ledger.write([statement])
    return {"userId": row.user_id, "sessionId": row.session_id, "skipped": "no messages"}


def _messages(row: PendingSession) -> list[Message]:
    return [Message.model_validate(m) for m in row.messages or []]


async def _run_here(pipeline: SessionExtraction, row: PendingSession) -> dict[str, Any]:
    """Run the pipeline in this invocation (no writer binding)."""
    head: dict[str, Any] = {"userId": row.user_id, "sessionId": row.session_id}
    try:
        outcome = await pipeline.run(
            row.user_id, row.session_id, _messages(row), row.extractor, session_now=row.created_at
        )
    except ExtractionRequestError as exc:  # the extractor is gone from this deployment
        return {**head, "error": exc.code}
    return {
        **head,
        "processed": outcome.processed,
        "pending": outcome.pending,
        "entities": len(outcome.entities),
    }


async def _resend_through_writer(bindings: Bindings, row: PendingSession) -> dict[str, Any]:
    """Re-send the session to its user's writer, as a client re-send would: the pipeline
    extracts only the ranges still owed, in turn with the user's other writes. The session
    keeps the date it was first extracted with (relative dates in it)."""
    assert bindings.writers is not None
    call = ExtractCall(
        user_id=row.user_id,
        session_id=row.session_id,
        messages=_messages(row),
        extractor=row.extractor,
        session_now=row.created_at,
    )
    head: dict[str, Any] = {"userId": row.user_id, "sessionId": row.session_id}
    try:
        done = await RemoteWriter(bindings.writers(row.user_id)).run(writes.extract, call)
    except WriterRefused as exc:
        return {**head, "status": exc.refusal.status, "error": exc.refusal.code}
    except WriterUnavailable:
        return {**head, "status": 503, "error": "writer_unavailable"}
    return {
        **head,
        "processed": done.processed,
        "pending": done.pending,
        "entities": len(done.entities),
    }


async def scheduled_retry_pending(bindings: Bindings) -> dict[str, Any]:
    """What the cron trigger runs; without a ledger nothing can be pending."""
    if bindings.db is None:
        return {"due": 0, "skipped": "no D1 ledger bound"}
    ledger = Ledger(bindings.db)
    return await retry_pending_sessions(build_store(bindings, ledger), ledger, bindings)
