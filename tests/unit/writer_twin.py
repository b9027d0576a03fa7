"""The Durable Object namespace's semantics in-process, for CPython tests: one live writer
per user id, each with its own SQLite table, reached through a stub whose methods are the
object's RPC method (`await stub.serve(name, call_json)`), as entry.py's `UserWriter` has it."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from entity_memory.extraction.registry import ExtractorFactory, build_extractor
from entity_memory.http.errors import refusal_for
from entity_memory.service.bindings import Bindings
from entity_memory.service.user_writer import WriterState
from entity_memory.service.writer_host import WriterHost
from entity_memory.storage.local_table import SQLiteTable


class TwinStub:
    """A stub: the object's one RPC method, taking and answering JSON strings."""

    def __init__(self, twin: WriterTwin, user_id: str) -> None:
        self.twin, self.user_id = twin, user_id

    async def serve(self, name: str, call_json: str) -> str:
        self.twin.calls.append((self.user_id, name))
        return await self.twin.host(self.user_id).serve(name, call_json)


@dataclass
class WriterTwin:
    bind: Callable[[Any], Bindings]
    clock: Callable[[], int]
    sleep: Callable[[float], Awaitable[None]]
    factory: ExtractorFactory = build_extractor
    hosts: dict[str, WriterHost] = field(default_factory=dict)
    #: (user id, operation) of every call, in order.
    calls: list[tuple[str, str]] = field(default_factory=list)
    #: Alarms running (their tasks, kept so none is collected mid-run).
    alarms: set[asyncio.Task[None]] = field(default_factory=set)
    #: The later alarms each writer asked for (epoch ms: a flush retried or left for later,
    #: a model retried), in order; a test runs them with `host(user).alarm()`.
    later: dict[str, list[int]] = field(default_factory=dict)

    @property
    def writers(self) -> dict[str, WriterHost]:
        return self.hosts

    def host(self, user_id: str, table: SQLiteTable | None = None) -> WriterHost:
        if user_id not in self.hosts:
            table = table or SQLiteTable(sqlite3.connect(":memory:", isolation_level=None))
            state = WriterState(table, self.clock, self.sleep, self._later(user_id))
            host = WriterHost(
                state, lambda: self.bind(None), refusal_for, self.factory, self._alarm(user_id)
            )
            self.hosts[user_id] = host
        return self.hosts[user_id]

    def _alarm(self, user_id: str) -> Callable[[], Awaitable[None]]:
        """The object's alarm set for now: it runs soon, outside the call that set it (as
        workerd runs `alarm()` as its own event)."""

        async def wake() -> None:
            task = asyncio.ensure_future(self.host(user_id).alarm())
            self.alarms.add(task)
            task.add_done_callback(self.alarms.discard)

        return wake

    def _later(self, user_id: str) -> Callable[[int], Awaitable[None]]:
        async def schedule(at_ms: int) -> None:
            self.later.setdefault(user_id, []).append(at_ms)

        return schedule

    def writer(self, user_id: str) -> WriterState:
        return self.host(user_id).state

    def restart(self, user_id: str) -> None:
        """A new instance over the same storage, as after an eviction or a crash."""
        old = self.hosts.pop(user_id).state
        self.host(user_id, table=old.table)  # type: ignore[arg-type]

    def stub(self, user_id: str) -> TwinStub:
        return TwinStub(self, user_id)
