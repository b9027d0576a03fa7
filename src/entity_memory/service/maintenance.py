"""Scheduled upkeep: rebuild the indexes of recently written users.

Two writers racing on one user's index (KV is last-writer-wins) can drop an entry; the entity
itself is safe. The cron trigger repairs such losses without anyone noticing them first, and
visits only users the ledger saw writing recently, so its cost follows activity, not size.
"""

from __future__ import annotations

import logging
from typing import Any

from entity_memory.service import writes
from entity_memory.service.bindings import Bindings
from entity_memory.service.expiry import ReportExpired
from entity_memory.service.reindex import reindex
from entity_memory.service.stores import build_store
from entity_memory.service.writers import RemoteWriter, WriterRefused, WriterUnavailable
from entity_memory.service.writes import EntityRefModel, ExpiredCall, ReindexCall
from entity_memory.storage.ledger import Ledger
from entity_memory.storage.store import EntityStore

logger = logging.getLogger(__name__)

HOUR_MS = 60 * 60 * 1000
#: How far back a cron run looks for users with writes (a margin over the cron interval).
ACTIVITY_WINDOW_MS = 2 * HOUR_MS
MAX_USERS_PER_RUN = 50


async def reindex_recent_users(
    store: EntityStore,
    ledger: Ledger,
    window_ms: int = ACTIVITY_WINDOW_MS,
    max_users: int = MAX_USERS_PER_RUN,
) -> dict[str, Any]:
    users = await ledger.recent_users(store.clock() - window_ms, max_users)
    results = {user: await reindex(store, user) for user in users}
    return {
        "users": len(users),
        "restored": sum(r["restored"] for r in results.values()),
        "dropped": sum(r["dropped"] for r in results.values()),
        "perUser": results,
    }


async def reindex_through_writers(ledger: Ledger, bindings: Bindings) -> dict[str, Any]:
    """With a writer per user, each user's index is rebuilt by that user's writer, in turn
    with its other writes (a reindex beside it would race them)."""
    assert bindings.writers is not None
    users = await ledger.recent_users(bindings.clock() - ACTIVITY_WINDOW_MS, MAX_USERS_PER_RUN)
    results: dict[str, Any] = {}
    for user in users:
        try:
            writer = RemoteWriter(bindings.writers(user))
            done = await writer.run(writes.reindex, ReindexCall(user_id=user))
        except (WriterRefused, WriterUnavailable) as exc:
            logger.error("could not reindex %s: %s", user, exc)
            results[user] = {"error": str(exc)}
            continue
        results[user] = done.model_dump()
    return {
        "users": len(users),
        "restored": sum(r.get("restored", 0) for r in results.values()),
        "dropped": sum(r.get("dropped", 0) for r in results.values()),
        "perUser": results,
    }


def expired_to_writer(bindings: Bindings) -> ReportExpired:
    """Sends the expired entries a context request found to the user's writer, which owns
    the index: dropped by the Worker, they would come back with the writer's next flush.

    Sent after the response where the runtime allows (the writer may be busy with a long
    extraction, and then waits for its index flush); a report that fails is logged, and the
    next context request that meets those entries reports them again.
    """
    writers = bindings.writers
    assert writers is not None

    async def send(user_id: str, refs: list[tuple[str, str]]) -> None:
        call = ExpiredCall(
            user_id=user_id, entities=[EntityRefModel(type=t, id=i) for t, i in refs]
        )
        try:
            await RemoteWriter(writers(user_id)).run(writes.drop_expired, call)
        except Exception:
            logger.exception("could not report expired entries of %s", user_id)

    async def report(user_id: str, refs: list[tuple[str, str]]) -> None:
        if bindings.defer is None:
            await send(user_id, refs)
        else:
            bindings.defer(send(user_id, refs))

    return report


async def scheduled_reindex(bindings: Bindings) -> dict[str, Any]:
    """What the cron trigger runs; without a ledger there is no activity record to follow."""
    if bindings.db is None:
        return {"users": 0, "skipped": "no D1 ledger bound"}
    ledger = Ledger(bindings.db)
    if bindings.writers is not None:
        return await reindex_through_writers(ledger, bindings)
    return await reindex_recent_users(build_store(bindings, ledger), ledger)
