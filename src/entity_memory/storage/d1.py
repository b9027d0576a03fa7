"""The slice of D1 the ledger uses, as a protocol, plus a SQLite twin for CPython.

D1 is SQLite, so the twin runs the same migrations and SQL; `batch` is one transaction in
both (D1 runs a batch as a single transaction). `CountingD1` counts statements and round trips.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

Params = Sequence[Any]
Statement = tuple[str, Params]


class D1Database(Protocol):
    async def all(self, sql: str, params: Params = ()) -> list[dict[str, Any]]:
        """Rows of one statement, as dicts."""
        ...

    async def batch(self, statements: Sequence[Statement]) -> list[list[dict[str, Any]]]:
        """Run statements in one round trip and one transaction; rows of each."""
        ...


def migration_files(directory: Path) -> list[Path]:
    """Migrations in the order wrangler applies them (by file name: 0001_..., 0002_...)."""
    return sorted(directory.glob("*.sql"))


class SQLiteD1:
    """D1 semantics on the standard library's sqlite3, for tests and embedding."""

    def __init__(self, path: str = ":memory:", migrations: Path | None = None) -> None:
        # One event loop uses it at a time; it may be another thread than the creator's.
        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.conn.row_factory = sqlite3.Row
        if migrations is not None:
            self.migrate(migrations)

    def migrate(self, directory: Path) -> None:
        for path in migration_files(directory):
            self.conn.executescript(path.read_text())

    def _run(self, sql: str, params: Params) -> list[dict[str, Any]]:
        return [dict(row) for row in self.conn.execute(sql, tuple(params)).fetchall()]

    async def all(self, sql: str, params: Params = ()) -> list[dict[str, Any]]:
        return self._run(sql, params)

    async def batch(self, statements: Sequence[Statement]) -> list[list[dict[str, Any]]]:
        self.conn.execute("BEGIN")
        try:
            results = [self._run(sql, params) for sql, params in statements]
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")
        return results


@dataclass
class CountingD1:
    inner: D1Database
    calls: int = 0
    statements: int = 0
    by_verb: Counter[str] = field(default_factory=Counter)

    def _count(self, sqls: Sequence[str]) -> None:
        self.calls += 1
        self.statements += len(sqls)
        for sql in sqls:
            self.by_verb[sql.split(None, 1)[0].upper()] += 1

    async def all(self, sql: str, params: Params = ()) -> list[dict[str, Any]]:
        self._count([sql])
        return await self.inner.all(sql, params)

    async def batch(self, statements: Sequence[Statement]) -> list[list[dict[str, Any]]]:
        self._count([sql for sql, _ in statements])
        return await self.inner.batch(statements)
