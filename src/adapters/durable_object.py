"""The user's writer as a Durable Object: its storage, its alarm, and the Worker's way of
reaching it.

The `DurableObject` class is entry.py's `UserWriter` (the name wrangler.toml binds as
USER_WRITER), one instance per user id. Its one RPC method, `serve`, runs the writer's
operations (`service.writes.OPERATIONS`) by name in `service.writer_host.WriterHost`,
against the writer's own copy in the object's SQLite storage (`service.user_writer`). The
Worker calls it through `durable_writers`; reads stay in the Worker, on KV.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from entity_memory.service.bindings import WriterStubs
from entity_memory.storage.local_table import LocalTable, PartedTable, SQLiteTable

T = TypeVar("T")


class SqlStorageTable(PartedTable):
    """`LocalTable` over the object's SQLite storage (`ctx.storage.sql`): synchronous calls,
    each statement its own transaction unless run inside `ctx.storage.transactionSync`."""

    def __init__(self, sql: Any, transaction_sync: Callable[[Any], Any] | None = None) -> None:
        self.sql = sql
        self._transaction_sync = transaction_sync
        self.create_schema()

    def _query(self, sql: str, *params: Any) -> list[Mapping[str, Any]]:
        rows = self.sql.exec(sql, *params).toArray()
        return [dict(row) for row in (rows.to_py() if hasattr(rows, "to_py") else rows)]

    def _atomically(self, work: Callable[[], T]) -> T:
        # BEGIN/COMMIT are refused by the platform; transactionSync runs `work` as one
        # transaction. Without it (older runtimes), the statements of one synchronous call
        # still reach storage together, as the object's writes are coalesced until it awaits.
        if self._transaction_sync is None:
            return work()
        try:
            from pyodide.ffi import create_once_callable
        except ImportError:  # CPython (tests): the platform's twin takes the callable as it is
            return self._transaction_sync(work)
        # A plain callable would cross as a proxy that lives until JS collects it, holding
        # the value being written (megabytes for a large index); this one goes after its call.
        return self._transaction_sync(create_once_callable(work))


def open_table(ctx: Any) -> LocalTable:
    """The platform's SQL storage; on the local host (which has none), a sqlite3 file the host
    gives the object under its state directory (`ctx.storage.sqlitePath`)."""
    storage = ctx.storage
    path = getattr(storage, "sqlitePath", None)
    if path:
        return SQLiteTable.open(str(path))
    return SqlStorageTable(storage.sql, getattr(storage, "transactionSync", None))


def storage_emptier(ctx: Any, table: LocalTable) -> Callable[[], Awaitable[None]] | None:
    """How an erasure empties the object's storage: on the platform `ctx.storage.deleteAll()`,
    the only call that frees all of it (deleting rows or dropping tables leaves pages and
    metadata behind), then the tables are made again. None on the local host's sqlite3 file,
    which the table compacts itself (VACUUM)."""
    if not isinstance(table, SqlStorageTable):
        return None

    async def empty() -> None:
        result = ctx.storage.deleteAll()
        if hasattr(result, "then") or hasattr(result, "__await__"):
            await result
        table.create_schema()

    return empty


def alarm_setter(ctx: Any) -> Callable[[int], Awaitable[None]]:
    """Sets the object's alarm (`ctx.storage.setAlarm`, epoch ms): workerd then calls the
    object's `alarm()`, even after an eviction.

    An object has one alarm, and setting it replaces the one set: the earlier time is kept,
    so a later retry (vectors flushed within 5 s, a model retried in a minute) never delays
    an alarm set for now (a job, a write's backlog). One request at a time, so two callers
    cannot each read the old time and both set theirs."""
    lock = asyncio.Lock()

    async def set_alarm(at_ms: int) -> None:
        async with lock:
            get_alarm = getattr(ctx.storage, "getAlarm", None)
            held = None if get_alarm is None else await _settled(get_alarm())
            # No alarm is JavaScript's null, which crosses as pyodide's `jsnull`, not None.
            if isinstance(held, int | float) and held <= at_ms:
                return
            await _settled(ctx.storage.setAlarm(at_ms))

    return set_alarm


async def _settled(result: Any) -> Any:
    """`result`, awaited if it is a promise (the platform) or a coroutine."""
    if hasattr(result, "then") or hasattr(result, "__await__"):
        return await result
    return result


def durable_writers(namespace: Any) -> WriterStubs:
    """The user's writer by user id, over the Durable Object namespace binding: the stub of
    the object named by the user id (RPC: `await stub.serve(name, call_json)`), called by
    `service.writers.RemoteWriter`."""

    def stub(user_id: str) -> Any:
        return namespace.getByName(user_id)

    return stub
