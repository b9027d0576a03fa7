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

from adapters.durable_object import SqlStorageTable, alarm_setter, open_table, storage_emptier
from entity_memory.service.user_writer import UserErased, WriterState
from entity_memory.storage.local_table import MAX_PART_BYTES, PartedTable, Row, SQLiteTable

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
        self.emptied = 0

    def exec(self, query: str, *bindings: Any) -> SqlCursorTwin:
        words = query.lstrip().split(None, 1)
        if words and words[0].upper() in {"BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT"}:
            raise RuntimeError("use ctx.storage.transactionSync() instead of BEGIN/COMMIT")
        found = self.conn.execute(query, bindings).fetchall()
        return SqlCursorTwin([dict(row) for row in found])

    async def delete_all(self) -> None:
        """`ctx.storage.deleteAll()`: the whole database goes (tables too)."""
        self.conn = sqlite3.connect(":memory:", isolation_level=None)
        self.conn.row_factory = sqlite3.Row
        self.emptied += 1


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
async def test_an_erased_writer_stays_authoritative_across_instances(
    clock: Clock, evicted: bool
) -> None:
    sql = SqlStorageTwin()
    table = SqlStorageTable(sql)
    storage = SimpleNamespace(sql=sql, deleteAll=sql.delete_all)
    writer = WriterState(
        table, clock, empty_storage=storage_emptier(SimpleNamespace(storage=storage), table)
    )
    writer.table.put("entity:u:campaign:a", Row("{}", None, None))
    assert await writer.forget(["t1"]) == 1
    assert sql.emptied == 1  # the platform's deleteAll: nothing of the user is left behind
    again = WriterState(SqlStorageTable(sql), clock) if evicted else writer
    assert again.authoritative
    assert again.table.get("entity:u:campaign:a") is None
    with pytest.raises(UserErased):
        again.refuse_erased_token("t1")
    again.refuse_erased_token("t2")  # a token minted after the erasure is not refused
    again.refuse_erased_token(None)  # the admin token


def test_the_local_storage_emptier_is_the_files_own_compaction(tmp_path: Any) -> None:
    table = SQLiteTable.open(str(tmp_path / "o.sqlite"))
    assert storage_emptier(SimpleNamespace(storage=SimpleNamespace()), table) is None


async def test_erased_text_is_not_left_in_the_writers_file(clock: Clock, tmp_path: Any) -> None:
    path = tmp_path / "writer.sqlite"
    writer = WriterState(SQLiteTable.open(str(path)), clock)
    secret = "MARK-" + "e" * 40
    for i in range(200):
        writer.table.put(f"entity:u:campaign:c{i}", Row(f'{{"name": "{secret} {i}"}}', None, None))
    assert secret.encode() in path.read_bytes()
    await writer.forget(["t1"])
    assert secret.encode() not in path.read_bytes()
    assert writer.table.get("entity:u:campaign:c1") is None


def _tables() -> list[tuple[PartedTable, sqlite3.Connection]]:
    twin = SqlStorageTwin()
    local = SQLiteTable(sqlite3.connect(":memory:", isolation_level=None))
    return [(SqlStorageTable(twin), twin.conn), (local, local.conn)]


@pytest.mark.parametrize("text", ["abc", "日本語"], ids=["ascii", "utf8"])
def test_a_value_over_the_platforms_row_limit_is_stored_in_parts(text: str) -> None:
    """The platform refuses a string or row over 2 MB; an index of 10k entries is ~4 MB."""
    big = (text * (4 * MAX_PART_BYTES // len(text.encode())))[:-1]
    for table, conn in _tables():
        table.put("index:u:entities", Row(big, None, None))
        assert table.get("index:u:entities") == Row(big, None, None)
        largest = conn.execute(
            "SELECT max(length(CAST(value AS BLOB))) FROM"
            " (SELECT value FROM kv UNION ALL SELECT value FROM kv_parts)"
        ).fetchone()[0]
        assert largest <= MAX_PART_BYTES
        table.put("index:u:entities", Row("small", None, None))  # the old parts go
        assert table.get("index:u:entities") == Row("small", None, None)
        assert conn.execute("SELECT count(*) FROM kv_parts").fetchone()[0] == 0
        table.put("index:u:entities", Row(big, None, None))
        assert table.clear() == 1
        assert conn.execute("SELECT count(*) FROM kv_parts").fetchone()[0] == 0


def test_a_parted_write_that_fails_leaves_the_previous_value_whole() -> None:
    table = SQLiteTable(sqlite3.connect(":memory:", isolation_level=None))
    old = "a" * (3 * MAX_PART_BYTES)
    table.put("k", Row(old, None, None))
    calls = 0
    query = table._query

    def failing(sql: str, *params: Any) -> Any:
        nonlocal calls
        calls += 1
        if sql.startswith("INSERT INTO kv_parts") and calls > 3:  # the 2nd part
            raise sqlite3.OperationalError("disk I/O error")
        return query(sql, *params)

    table._query = failing  # type: ignore[method-assign]
    with pytest.raises(sqlite3.OperationalError):
        table.put("k", Row("b" * (3 * MAX_PART_BYTES), None, None))
    table._query = query  # type: ignore[method-assign]
    assert table.get("k") == Row(old, None, None)


def test_the_platforms_transaction_runs_a_parted_write() -> None:
    ran: list[str] = []

    def transaction_sync(work: Any) -> Any:
        ran.append("transaction")
        return work()

    table = SqlStorageTable(SqlStorageTwin(), transaction_sync)
    table.put("k", Row("x" * (2 * MAX_PART_BYTES), None, None))
    assert ran == ["transaction"]
    assert table.get("k") == Row("x" * (2 * MAX_PART_BYTES), None, None)


class AlarmStorageTwin:
    """`ctx.storage`'s alarm: one per object, replaced by each `setAlarm`."""

    def __init__(self) -> None:
        self.at: int | None = None
        self.sets = 0

    async def getAlarm(self) -> int | None:
        return self.at

    async def setAlarm(self, at: int) -> None:
        self.at, self.sets = at, self.sets + 1


async def test_an_alarm_is_never_pushed_later_by_a_later_request() -> None:
    storage = AlarmStorageTwin()
    set_alarm = alarm_setter(SimpleNamespace(storage=storage))
    await set_alarm(1_000)  # a job or a write's backlog: now
    await set_alarm(6_000)  # vectors to flush within 5 s
    assert storage.at == 1_000
    await set_alarm(500)
    assert storage.at == 500
    storage.at = None  # it fired
    await set_alarm(6_000)
    assert (storage.at, storage.sets) == (6_000, 3)
