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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

T = TypeVar("T")

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS kv ("
    " key TEXT PRIMARY KEY,"
    " value TEXT,"  # NULL: known to be absent (deleted here, or missing in KV)
    " expires_at INTEGER,"  # epoch ms; NULL: no expiry
    " metadata TEXT"
    ")"
)
#: The rest of a value longer than one part: parts 1, 2, ... (part 0 is `kv.value`).
PARTS_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS kv_parts ("
    " key TEXT NOT NULL,"
    " part INTEGER NOT NULL,"
    " value TEXT NOT NULL,"
    " PRIMARY KEY (key, part)"
    ")"
)
#: Durable Object SQL storage refuses a string, BLOB or row over 2 MB, and a user's index
#: passes 2 MB near 6,000 entries, so a longer value is stored in parts of at most this many
#: UTF-8 bytes (half the limit: the row's other columns and the key fit beside it).
MAX_PART_BYTES = 1_000_000
#: Characters a part holds when the value is not ASCII (UTF-8 takes at most 4 bytes a char).
_MAX_PART_CHARS_ANY = MAX_PART_BYTES // 4


def split_parts(value: str) -> list[str]:
    """`value` cut into parts that each fit a row ([value] when it already fits)."""
    size = MAX_PART_BYTES if value.isascii() else _MAX_PART_CHARS_ANY
    return [value[i : i + size] for i in range(0, len(value), size)] or [value]


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

    def compact(self) -> None:
        """Rewrite the storage so that nothing removed is left in its free pages (after an
        erasure). A no-op where the platform empties the storage instead (`deleteAll`)."""
        ...


class PartedTable:
    """`LocalTable` over any SQLite dialect: what differs (how a statement runs, how several
    run as one transaction) is left to subclasses; values longer than a part are split.

    A value can only be split at a part boundary if every part is written or none is, so
    `put` runs its statements as one transaction.
    """

    def _query(self, sql: str, *params: Any) -> Sequence[Mapping[str, Any]]:
        raise NotImplementedError

    def _atomically(self, work: Callable[[], T]) -> T:
        raise NotImplementedError

    def create_schema(self) -> None:
        """Make the tables if they are missing (a new object, or one whose storage the
        platform emptied)."""
        self._query(SCHEMA)
        self._query(PARTS_SCHEMA)

    def get(self, key: str) -> Row | None:
        found = self._query("SELECT value, expires_at, metadata FROM kv WHERE key = ?", key)
        if not found:
            return None
        row = found[0]
        value = row["value"]
        if value is not None and len(value) >= _MAX_PART_CHARS_ANY:
            rest = self._query("SELECT value FROM kv_parts WHERE key = ? ORDER BY part", key)
            value = "".join([value, *(part["value"] for part in rest)])
        return Row(value, row["expires_at"], row["metadata"])

    def put(self, key: str, row: Row) -> None:
        parts = [None] if row.value is None else split_parts(row.value)

        def write() -> None:
            self._query(
                "INSERT INTO kv (key, value, expires_at, metadata) VALUES (?, ?, ?, ?)"
                " ON CONFLICT(key) DO UPDATE SET value = excluded.value,"
                " expires_at = excluded.expires_at, metadata = excluded.metadata",
                key,
                parts[0],
                row.expires_at,
                row.metadata,
            )
            self._query("DELETE FROM kv_parts WHERE key = ?", key)
            for number, part in enumerate(parts[1:], start=1):
                self._query(
                    "INSERT INTO kv_parts (key, part, value) VALUES (?, ?, ?)", key, number, part
                )

        self._atomically(write)

    def clear(self) -> int:
        def wipe() -> int:
            removed = len(self._query("DELETE FROM kv RETURNING key"))
            self._query("DELETE FROM kv_parts")
            return removed

        return self._atomically(wipe)

    def compact(self) -> None:
        return None


class SQLiteTable(PartedTable):
    """`LocalTable` over a Python sqlite3 connection (CPython, and Pyodide on the local host,
    where the file lives on the host's state directory)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.conn.row_factory = sqlite3.Row
        self.create_schema()

    @classmethod
    def open(cls, path: str) -> SQLiteTable:
        # isolation_level=None: every statement commits on its own, like DO storage.
        return cls(sqlite3.connect(path, isolation_level=None))

    def _query(self, sql: str, *params: Any) -> Sequence[Mapping[str, Any]]:
        return self.conn.execute(sql, params).fetchall()

    def _atomically(self, work: Callable[[], T]) -> T:
        self.conn.execute("BEGIN")
        try:
            result = work()
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")
        return result

    def compact(self) -> None:
        # Rewrites the file from the live rows: a deleted row's text would otherwise stay
        # in the file's free pages until SQLite reuses them.
        self.conn.execute("VACUUM")
