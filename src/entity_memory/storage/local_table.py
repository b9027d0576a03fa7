"""The user's writer keeps its own copy of what it wrote: a key-value table in the Durable
Object's SQLite storage (or Python's sqlite3 where the platform's is not available).

The copy is what makes the single writer exact. KV is eventually consistent: a read right
after a write may return the old document, and two versions would then be numbered alike.
The writer reads its own table first, so it always merges onto what it last wrote; KV is
read only for keys the table has never seen (data written before the writer existed).

Synchronous by design: Durable Object SQL storage is synchronous, and a read that cannot
interleave with another request's write is the point.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Protocol

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS kv ("
    " key TEXT PRIMARY KEY,"
    " value TEXT,"  # NULL: known to be absent (deleted here, or missing in KV)
    " expires_at INTEGER,"  # epoch ms; NULL: no expiry
    " metadata TEXT"
    ")"
)


@dataclass(frozen=True)
class Row:
    value: str | None
    expires_at: int | None
    metadata: str | None


class LocalTable(Protocol):
    def get(self, key: str) -> Row | None: ...

    def put(self, key: str, row: Row) -> None: ...

    def clear(self) -> int:
        """Forget everything (erasing the user); the number of rows removed."""
        ...


class SQLiteTable:
    """`LocalTable` over a Python sqlite3 connection (CPython, and Pyodide on the local host,
    where the file lives on the host's state directory)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.conn.execute(SCHEMA)
        self.conn.commit()

    @classmethod
    def open(cls, path: str) -> SQLiteTable:
        # isolation_level=None: every statement commits on its own, like DO storage.
        return cls(sqlite3.connect(path, isolation_level=None))

    def get(self, key: str) -> Row | None:
        found = self.conn.execute(
            "SELECT value, expires_at, metadata FROM kv WHERE key = ?", (key,)
        ).fetchone()
        return None if found is None else Row(*found)

    def put(self, key: str, row: Row) -> None:
        self.conn.execute(
            "INSERT INTO kv (key, value, expires_at, metadata) VALUES (?, ?, ?, ?)"
            " ON CONFLICT(key) DO UPDATE SET value = excluded.value,"
            " expires_at = excluded.expires_at, metadata = excluded.metadata",
            (key, row.value, row.expires_at, row.metadata),
        )

    def clear(self) -> int:
        return int(self.conn.execute("DELETE FROM kv").rowcount or 0)
