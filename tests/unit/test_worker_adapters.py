"""adapters.workers over stand-ins shaped like the JS bindings: WorkersD1 answers the same rows
on both of its paths (workerd's statement API, the local host's JSON batch), and WorkersKV reads
values as text and hands the core plain Python."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import pytest

from adapters.workers import WorkersD1, WorkersKV

SCHEMA = "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, score REAL)"


class Statement:
    """A D1PreparedStatement: bind() returns a new statement; all() answers `{results}`."""

    def __init__(self, db: RealApiD1, sql: str, params: tuple[Any, ...] = ()) -> None:
        self.db, self.sql, self.params = db, sql, params

    def bind(self, *params: Any) -> Statement:
        return Statement(self.db, self.sql, params)

    async def all(self) -> dict[str, Any]:
        return {"results": self.db.run(self.sql, self.params)}


class RealApiD1:
    """The D1 API as workerd's binding offers it: prepare/batch only."""

    def __init__(self) -> None:
        self.conn = sqlite3.connect(":memory:", isolation_level=None)
        self.conn.row_factory = sqlite3.Row
        self.conn.execute(SCHEMA)
        self.prepared = 0

    def run(self, sql: str, params: tuple[Any, ...]) -> list[dict[str, Any]]:
        return [dict(r) for r in self.conn.execute(sql, params).fetchall()]

    def prepare(self, sql: str) -> Statement:
        self.prepared += 1
        return Statement(self, sql)

    async def batch(self, statements: list[Statement]) -> list[dict[str, Any]]:
        self.conn.execute("BEGIN")
        try:
            out = [{"results": self.run(s.sql, s.params)} for s in statements]
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")
        return out


class HostD1(RealApiD1):
    """The local host's wrapper: the real API plus the JSON batch (local/runtime.mjs)."""

    async def allJson(self, sql: str, params_json: str) -> str:
        return json.dumps(self.run(sql, tuple(json.loads(params_json))))

    async def batchJson(self, plan_json: str) -> str:
        plan = json.loads(plan_json)
        return json.dumps(
            [
                r["results"]
                for r in await self.batch([Statement(self, s, tuple(p)) for s, p in plan])
            ]
        )


WRITES = [
    ("INSERT INTO t (id, name, score) VALUES (?, ?, ?)", (1, "a", 0.5)),
    ("INSERT INTO t (id, name, score) VALUES (?, ?, ?)", (2, None, 2)),
    ("SELECT id, name, score FROM t ORDER BY id", ()),
]


@pytest.mark.parametrize("binding_cls", [RealApiD1, HostD1])
async def test_d1_paths_answer_the_same_rows(binding_cls: type[RealApiD1]) -> None:
    binding = binding_cls()
    db = WorkersD1(binding)
    results = await db.batch(WRITES)
    expected = [{"id": 1, "name": "a", "score": 0.5}, {"id": 2, "name": None, "score": 2.0}]
    assert results == [[], [], expected]
    assert await db.all("SELECT id, name, score FROM t WHERE id = ?", (2,)) == expected[1:]
    # The host path never builds statement objects from Python.
    assert (binding.prepared == 0) is (binding_cls is HostD1)


@pytest.mark.parametrize("binding_cls", [RealApiD1, HostD1])
async def test_d1_batch_is_one_transaction_on_both_paths(binding_cls: type[RealApiD1]) -> None:
    db = WorkersD1(binding_cls())
    with pytest.raises(sqlite3.IntegrityError):
        await db.batch([WRITES[0], WRITES[0]])
    assert await db.all("SELECT count(*) AS n FROM t") == [{"n": 0}]


class TextKV:
    """A KV binding: values are stored as text; `get(keys, "text")` answers a dict of them."""

    def __init__(self, values: dict[str, str]) -> None:
        self.values = values
        self.types: list[str] = []

    async def get(self, key: Any, value_type: str) -> Any:
        self.types.append(value_type)
        if isinstance(key, list):
            return {k: self.values.get(k) for k in key}
        return self.values.get(key)


async def test_kv_reads_values_as_text_and_parses_them_in_python() -> None:
    doc = {"entries": [{"id": "x", "n": [1, 2.5, None, True]}]}
    kv = WorkersKV(TextKV({"a": json.dumps(doc), "b": "3"}))
    found = await kv.get_json("a")
    assert found == doc and type(found) is dict
    assert await kv.get_json("missing") is None
    assert await kv.get_json_many(["a", "b", "c"]) == {"a": doc, "b": 3, "c": None}
    assert set(kv._kv.types) == {"text"}


async def test_d1_params_json_cannot_carry_take_the_statement_api() -> None:
    binding = HostD1()
    binding.conn.execute("CREATE TABLE b (data BLOB)")
    db = WorkersD1(binding)
    await db.batch([("INSERT INTO b (data) VALUES (?)", (b"\x00\x01",))])
    assert await db.all("SELECT data FROM b WHERE data = ?", (b"\x00\x01",)) == [
        {"data": b"\x00\x01"}
    ]
    assert binding.prepared == 2
