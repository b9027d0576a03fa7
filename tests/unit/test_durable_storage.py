"""The writer's copy over the platform's SQL storage (`ctx.storage.sql`), on CPython.

The local host hands objects a sqlite3 file instead (`ctx.storage.sqlitePath`), so the
production path, `SqlStorageTable`, is never run there: these tests run it against a twin of
the platform's API (synchronous `exec(query, *bindings)` returning a cursor with `toArray()`,
each statement its own transaction, no BEGIN/COMMIT from the object).
"""

from __future__ import annotations

import sqlite3
from types import SimpleNamespace
from typing import Any

import pytest

from adapters.durable_object import SqlStorageTable, open_table
from entity_memory.service.user_writer import UserWriter
from entity_memory.storage.local_table import Row, SQLiteTable

from .conftest import Clock


class SqlCursorTwin:
    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self._rows = rows

    def toArray(self) -> list[dict[str, Any]]:  # the platform's camelCase name
        return list(self._rows)


class SqlStorageTwin:
    """`ctx.storage.sql` as the platform documents it, over an in-memory sqlite3 database."""

    def __init__(self) -> None:
        self.conn = sqlite3.connect(":memory:", isolation_level=None)
        self.conn.row_factory = sqlite3.Row

    def exec(self, query: str, *bindings: Any) -> SqlCursorTwin:
        words = query.lstrip().split(None, 1)
        if words and words[0].upper() in {"BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT"}:
            raise RuntimeError("use ctx.storage.transactionSync() instead of BEGIN/COMMIT")
        found = self.conn.execute(query, bindings).fetchall()
        return SqlCursorTwin([dict(row) for row in found])


def test_rows_round_trip_and_upsert() -> None:
    table = SqlStorageTable(SqlStorageTwin())
    assert table.get("entity:u:campaign:a") is None
    table.put("entity:u:campaign:a", Row('{"v": 1}', 1_000, '{"m": 1}'))
    table.put("entity:u:campaign:a", Row('{"v": 2}', None, None))
    table.put("entity:u:campaign:b", Row(None, None, None))  # known absent
    assert table.get("entity:u:campaign:a") == Row('{"v": 2}', None, None)
    assert table.get("entity:u:campaign:b") == Row(None, None, None)


def test_clear_reports_what_it_removed() -> None:
    table = SqlStorageTable(SqlStorageTwin())
    for key in ("a", "b", "c"):
        table.put(key, Row("1", None, None))
    assert table.clear() == 3
    assert table.get("a") is None
    assert table.clear() == 0


def test_schema_creation_is_idempotent() -> None:
    """A new instance of the same object (after eviction) opens its existing storage."""
    sql = SqlStorageTwin()
    SqlStorageTable(sql).put("k", Row("1", None, None))
    assert SqlStorageTable(sql).get("k") == Row("1", None, None)


def test_open_table_prefers_the_hosts_file_and_falls_back_to_sql(tmp_path: Any) -> None:
    local = open_table(SimpleNamespace(storage=SimpleNamespace(sqlitePath=str(tmp_path / "o"))))
    assert isinstance(local, SQLiteTable)
    platform = open_table(SimpleNamespace(storage=SimpleNamespace(sql=SqlStorageTwin())))
    assert isinstance(platform, SqlStorageTable)


@pytest.mark.parametrize("evicted", [False, True])
def test_an_erased_writer_stays_authoritative_across_instances(clock: Clock, evicted: bool) -> None:
    sql = SqlStorageTwin()
    writer = UserWriter(SqlStorageTable(sql), clock)
    writer.table.put("entity:u:campaign:a", Row("{}", None, None))
    assert writer.forget() == 1
    again = UserWriter(SqlStorageTable(sql), clock) if evicted else writer
    assert again.authoritative
    assert again.table.get("entity:u:campaign:a") is None
