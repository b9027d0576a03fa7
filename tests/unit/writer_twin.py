"""The Durable Object namespace's semantics in-process, for CPython tests: one live writer
per user id, each with its own SQLite table and its own app, reached by `forward`."""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from fastapi import FastAPI

from entity_memory.http.app import create_app
from entity_memory.service.settings import Bindings
from entity_memory.service.user_writer import UserWriter
from entity_memory.storage.local_table import SQLiteTable


@dataclass
class WriterTwin:
    bind: Callable[[Any], Bindings]
    clock: Callable[[], int]
    sleep: Callable[[float], Awaitable[None]]
    writers: dict[str, tuple[UserWriter, FastAPI]] = field(default_factory=dict)

    def writer(self, user_id: str, table: SQLiteTable | None = None) -> UserWriter:
        if user_id not in self.writers:
            table = table or SQLiteTable(sqlite3.connect(":memory:", isolation_level=None))
            writer = UserWriter(table, self.clock, self.sleep)
            self.writers[user_id] = (writer, create_app(self.bind, writer=writer))
        return self.writers[user_id][0]

    def restart(self, user_id: str) -> None:
        """A new instance over the same storage, as after an eviction or a crash."""
        old = self.writers.pop(user_id)[0]
        self.writer(user_id, table=old.table)  # type: ignore[arg-type]

    async def forward(
        self, user_id: str, method: str, url: str, headers: list[tuple[str, str]], body: bytes
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        writer = self.writer(user_id)
        app = self.writers[user_id][1]

        async def op() -> httpx.Response:
            transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
            async with httpx.AsyncClient(transport=transport, base_url="http://writer") as c:
                return await c.request(method, url, headers=headers, content=body)

        r = await writer.run(op, failed=lambda r: r.status_code >= 400)
        return r.status_code, list(r.headers.multi_items()), r.content
