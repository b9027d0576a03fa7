"""Scheduled upkeep: rebuild the indexes of recently written users.

Two writers racing on one user's index (KV is last-writer-wins) can drop an entry; the entity
itself is safe. The cron trigger repairs such losses without anyone noticing them first, and
visits only users the ledger saw writing recently, so its cost follows activity, not size.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from entity_memory.service.expiry import ReportExpired
from entity_memory.service.reindex import reindex
from entity_memory.service.settings import Bindings
from entity_memory.service.stores import build_store
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


#: The origin of requests the Worker sends its users' writers (only the path is read there).
WRITER_ORIGIN = "https://writer.internal"


async def reindex_through_writers(ledger: Ledger, bindings: Bindings) -> dict[str, Any]:
    """With a writer per user, each user's index is rebuilt by that user's writer, in turn
    with its other writes (a reindex beside it would race them)."""
    assert bindings.forward_write is not None
    users = await ledger.recent_users(bindings.clock() - ACTIVITY_WINDOW_MS, MAX_USERS_PER_RUN)
    results: dict[str, Any] = {}
    for user in users:
        url = f"{WRITER_ORIGIN}/v1/users/{user}/reindex"
        status, _, body = await bindings.forward_write(user, "POST", url, [], b"")
        results[user] = json.loads(body) if status == 200 else {"status": status}
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
    forward_write = bindings.forward_write
    assert forward_write is not None

    async def send(user_id: str, refs: list[tuple[str, str]]) -> None:
        body = json.dumps({"entities": [{"type": t, "id": i} for t, i in refs]}).encode()
        url = f"{WRITER_ORIGIN}/v1/users/{user_id}/expired"
        headers = [("content-type", "application/json")]
        try:
            status, _, answer = await forward_write(user_id, "POST", url, headers, body)
        except Exception:
            logger.exception("could not report expired entries of %s", user_id)
            return
        if status != 200:
            logger.error("the writer of %s answered %s: %r", user_id, status, answer[:200])

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
    if bindings.forward_write is not None:
        return await reindex_through_writers(ledger, bindings)
    return await reindex_recent_users(build_store(bindings, ledger), ledger)
