"""`adapters.workers` over fake bindings shaped like the SDK-wrapped JS ones.

The D1 fakes run on sqlite3: `WorkerdD1` has only workerd's binding API (prepare/bind/batch),
`HostD1` adds the local host's `hostBatchJson` (JSON in, JSON out, as local/runtime.mjs).
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import pytest

from adapters.workers import D1_HOST_BATCH, WorkersD1, WorkersKV
from entity_memory.domain.models import EntityIndex

SCHEMA = "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, data BLOB)"


class Result(dict):
    """Stands in for the SDK's `JsDict` (a dict subclass)."""


class Statement:
    def __init__(self, db: WorkerdD1, sql: str, params: tuple[Any, ...] = ()) -> None:
        self.db, self.sql, self.params = db, sql, params

    def bind(self, *params: Any) -> Statement:
        self.db.binds += 1
        return Statement(self.db, self.sql, params)

    async def all(self) -> Result:
        return Result(results=self.db.run(self.sql, self.params))


class WorkerdD1:
    def __init__(self) -> None:
        self.conn = sqlite3.connect(":memory:", isolation_level=None)
        self.conn.row_factory = sqlite3.Row
        self.conn.execute(SCHEMA)
        self.prepares = 0
        self.binds = 0

    def run(self, sql: str, params: tuple[Any, ...]) -> list[dict[str, Any]]:
        return [dict(row) for row in self.conn.execute(sql, params)]

    def prepare(self, sql: str) -> Statement:
        self.prepares += 1
        return Statement(self, sql)

    async def batch(self, statements: list[Statement]) -> list[Result]:
        self.conn.execute("BEGIN")
        try:
            results = [Result(results=self.run(s.sql, s.params)) for s in statements]
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")
        return results


class HostD1(WorkerdD1):
    def __init__(self) -> None:
        super().__init__()
        self.host_calls = 0

    async def hostBatchJson(self, payload: str) -> str:
        self.host_calls += 1
        statements = [Statement(self, sql, tuple(params)) for sql, params in json.loads(payload)]
        return json.dumps([r["results"] for r in await self.batch(statements)])


WRITES = [
    ("INSERT INTO t (id, name) VALUES (?, ?)", (1, "a")),
    ("INSERT INTO t (id, name) VALUES (?, ?)", (2, None)),
    ("SELECT id, name FROM t ORDER BY id", ()),
]


def test_the_host_method_name_matches_the_js_side() -> None:
    from pathlib import Path

    runtime = Path(__file__).resolve().parents[2] / "local" / "runtime.mjs"
    assert f'D1_HOST_BATCH = "{D1_HOST_BATCH}"' in runtime.read_text()


async def test_both_paths_answer_the_same() -> None:
    workerd, host = WorkerdD1(), HostD1()
    got = [await WorkersD1(b).batch(WRITES) for b in (workerd, host)]
    assert got[0] == got[1] == [[], [], [{"id": 1, "name": "a"}, {"id": 2, "name": None}]]
    assert [type(row) for row in got[1][2]] == [dict, dict]
    assert await WorkersD1(host).all("SELECT name FROM t WHERE id = ?", [1]) == [{"name": "a"}]


async def test_the_host_path_crosses_once_per_batch_and_builds_nothing_in_python() -> None:
    host = HostD1()
    db = WorkersD1(host)
    await db.batch(WRITES)
    await db.all("SELECT * FROM t")
    assert (host.host_calls, host.prepares, host.binds) == (2, 0, 0)


async def test_without_the_host_method_statements_are_prepared_and_bound() -> None:
    workerd = WorkerdD1()
    await WorkersD1(workerd).batch(WRITES)
    assert (workerd.prepares, workerd.binds) == (3, 2)


@pytest.mark.parametrize("value", [b"\x00\x01", 2**60, float("nan")])
async def test_values_json_cannot_carry_take_the_sdk_path(value: Any) -> None:
    host = HostD1()
    await WorkersD1(host).batch([("INSERT INTO t (id, data) VALUES (?, ?)", (1, value))])
    assert (host.host_calls, host.prepares) == (0, 1)


async def test_an_empty_batch_is_no_call() -> None:
    host = HostD1()
    assert await WorkersD1(host).batch([]) == []
    assert (host.host_calls, host.prepares) == (0, 0)


async def test_a_failing_batch_applies_nothing_on_either_path() -> None:
    for binding in (WorkerdD1(), HostD1()):
        db = WorkersD1(binding)
        bad = [WRITES[0], ("INSERT INTO t (id, name) VALUES (?, ?)", (1, "dup"))]
        with pytest.raises(sqlite3.IntegrityError):
            await db.batch(bad)
        assert await db.all("SELECT * FROM t") == []


class BytesKV:
    """A KV binding as the SDK presents it: `get(key, "arrayBuffer")` gives a memoryview,
    bulk `get(keys, "text")` a dict of text."""

    def __init__(self, items: dict[str, str]) -> None:
        self.items = items
        self.types: list[str] = []

    async def get(self, key: str | list[str], kind: str) -> Any:
        self.types.append(kind)
        if isinstance(key, list):
            return {k: self.items.get(k) for k in key}
        value = self.items.get(key)
        return None if value is None else memoryview(value.encode())


async def test_kv_values_are_read_as_bytes_or_text_and_parsed_in_python() -> None:
    binding = BytesKV({"a": '{"x": [1, {"y": null}], "z": "日本"}', "b": "3"})
    kv = WorkersKV(binding)
    value = await kv.get_json("a")
    assert value == {"x": [1, {"y": None}], "z": "日本"} and type(value) is dict
    assert await kv.get_json("missing") is None
    assert await kv.get_json_many(["b", "missing"]) == {"b": 3, "missing": None}
    assert binding.types == ["arrayBuffer", "arrayBuffer", "text"]


async def test_kv_text_is_the_stored_bytes_unparsed_for_the_index_parser() -> None:
    entry = {"id": "c", "type": "campaign", "name": "Été", "importance": 0.5, "updatedAt": 1}
    doc = json.dumps({"entries": [entry]}, ensure_ascii=False)
    kv = WorkersKV(BytesKV({"index": doc}))
    raw = await kv.get_text("index")
    assert raw == doc.encode() and type(raw) is bytes
    assert EntityIndex.model_validate_json(raw or b"").entries[0].name == "Été"
    assert await kv.get_text("missing") is None
