"""One writer per user on the real host: the Worker forwards writes to the user's Durable
Object (the host runs it, one live instance per id, SQLite under the state dir)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest

from entity_memory.domain.kind import kind_of

from .hostproc import Host

pytestmark = pytest.mark.e2e


async def _put_all(host: Host, user: str, bodies: list[dict]) -> list[httpx.Response]:
    async with httpx.AsyncClient(base_url=host.base_url, timeout=120) as ac:
        return await asyncio.gather(
            *(ac.put(f"/v1/users/{user}/entities", json=body) for body in bodies)
        )


def test_concurrent_writers_lose_nothing_and_the_index_is_complete_at_once(host: Host) -> None:
    bodies = [
        {
            "session_id": f"s{c}-{b}",
            "entities": [{"type": "campaign", "name": f"W {c}-{b}-{i}"} for i in range(3)],
        }
        for c in range(6)
        for b in range(4)
    ]
    replies = asyncio.run(_put_all(host, "e2e-writers", bodies))
    assert [r.status_code for r in replies] == [200] * len(bodies)
    # Right after the last acknowledgement: no reindex, no cron.
    index = json.loads(host.answered_index("e2e-writers"))
    keys = {k["name"] for k in host.kv_list("entity:e2e-writers:")}
    assert len(keys) == 72
    assert {f"entity:e2e-writers:{e['type']}:{e['id']}" for e in index["entries"]} == keys


def test_one_entity_written_concurrently_gets_one_version_per_write(host: Host) -> None:
    bodies = [
        {
            "session_id": f"s{i}",
            "entities": [{"type": "pain_point", "name": "Slow reports", "content": f"mention {i}"}],
        }
        for i in range(16)
    ]
    replies = asyncio.run(_put_all(host, "e2e-one", bodies))
    versions = sorted(r.json()["results"][0]["version"] for r in replies)
    assert versions == list(range(1, 17))
    with httpx.Client(base_url=host.base_url, timeout=60) as c:
        stored = c.get("/v1/users/e2e-one/entities/pain_point/slow-reports").json()
    assert stored["metadata"]["frequency"] == 16
    history = host.d1(
        "SELECT version FROM entity_versions WHERE user_id = 'e2e-one' ORDER BY version"
    )
    assert [row["version"] for row in history] == list(range(1, 17))


def test_the_writer_keeps_its_copy_under_the_state_dir_and_forget_clears_it(host: Host) -> None:
    mark = b"MARK-e2e-copy-7f3a"
    with httpx.Client(base_url=host.base_url, timeout=60) as c:
        body = {"session_id": "s1", "entities": [{"type": "campaign", "name": "Alpha"}]}
        assert c.put("/v1/users/e2e-copy/entities", json=body).status_code == 200
        noted = {"type": "pain_point", "name": "Slow reports", "content": mark.decode()}
        c.put("/v1/users/e2e-copy/entities", json={"session_id": "s2", "entities": [noted]})
        objects = Path(host.persist_dir) / "do" / "UserWriter"
        files = [p for p in objects.iterdir() if p.suffix == ".sqlite"]
        holding = [p for p in files if mark in p.read_bytes()]
        assert holding  # the writer's copy, in the object's storage file
        gone = c.delete("/v1/users/e2e-copy").json()
        # Compacted after the erasure: the text is not left in the file's free pages.
        assert not any(mark in p.read_bytes() for p in holding)
        assert gone["complete"] and gone["writerRowsDeleted"] >= 2
        assert c.get("/v1/users/e2e-copy/entities").json()["count"] == 0
        again = c.put("/v1/users/e2e-copy/entities", json=body).json()
        assert again["results"][0]["version"] == 1  # nothing of the old user came back


def test_forget_racing_writes_leaves_a_consistent_user(host: Host) -> None:
    """Erasure runs in the user's writer, so a racing write lands wholly before it (erased)
    or wholly after it (a new, complete write): never half an entity, index or ledger."""
    user = "e2e-forget-race"

    async def race() -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=host.base_url, timeout=120) as ac:
            body = {"session_id": "s", "entities": [{"type": "campaign", "name": "Alpha"}]}
            await ac.put(f"/v1/users/{user}/entities", json=body)
            writes = [
                ac.put(
                    f"/v1/users/{user}/entities",
                    json={
                        "session_id": f"s{i}",
                        "entities": [{"type": "campaign", "name": f"R{i}"}],
                    },
                )
                for i in range(6)
            ]
            return await asyncio.gather(ac.delete(f"/v1/users/{user}"), *writes)

    forget, *writes = asyncio.run(race())
    assert forget.status_code == 200 and forget.json()["complete"]
    assert all(w.status_code == 200 for w in writes)
    keys = {k["name"] for k in host.kv_list(f"entity:{user}:")}
    raw = host.answered_index(user)
    indexed = set()
    if raw:
        indexed = {f"entity:{user}:{e['type']}:{e['id']}" for e in json.loads(raw)["entries"]}
    assert keys == indexed
    assert f"entity:{user}:campaign:alpha" not in keys  # written before the erase: erased
    rows = host.d1(f"SELECT DISTINCT entity_id FROM entity_versions WHERE user_id = '{user}'")
    assert {f"entity:{user}:campaign:{r['entity_id']}" for r in rows} == keys


def test_an_expiry_a_context_request_finds_is_dropped_by_the_writer_after_the_answer(
    host: Host,
) -> None:
    """The Worker answers without the expired entity and hands it to the user's writer in the
    background (waitUntil); the writer checks KV, drops the index entry, records the expiry."""
    import time
    from datetime import UTC, datetime, timedelta

    user = "e2e-expiry"
    written = datetime.now(UTC) - timedelta(days=kind_of("metric").ttl_days + 10)  # expired
    past = {"x-entity-memory-now": written.isoformat().replace("+00:00", "Z")}
    metric = {
        "type": "metric",
        "name": "Alpha CPA",
        "content": "CPA of Alpha is $42",
        "metadata": {"kpi": "CPA", "value": 42, "unit": "USD", "campaign": "Alpha"},
    }
    with httpx.Client(base_url=host.base_url, timeout=60) as c:
        body = {"session_id": "s1", "entities": [metric, {"type": "campaign", "name": "Alpha"}]}
        assert c.put(f"/v1/users/{user}/entities", json=body, headers=past).status_code == 200
        # KV's own TTL runs on real time: take the document away as its expiry would.
        host.wrangler(
            "kv", "key", "delete", f"entity:{user}:metric:alpha-cpa", "--binding", "ENTITIES"
        )
        r = c.post(f"/v1/users/{user}/context", json={"task": "Alpha CPA"})
        assert [e["type"] for e in r.json()["entities"]] == ["campaign"]
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            listed = c.get(f"/v1/users/{user}/entities").json()["entities"]
            if [e["type"] for e in listed] == ["campaign"]:
                break
            time.sleep(0.5)
    assert [e["type"] for e in listed] == ["campaign"]
    kinds = host.d1(
        f"SELECT change_kind FROM entity_versions WHERE user_id = '{user}'"
        " AND entity_type = 'metric' ORDER BY version"
    )
    assert [k["change_kind"] for k in kinds][-1] == "expired"


def test_a_double_encoded_dot_dot_id_is_refused_not_redirected_to_the_user(host: Host) -> None:
    """Nothing between the route and the writer decodes an id again: the Worker calls the
    object's methods, it does not re-send a URL for it to parse."""
    body = {"session_id": "s1", "entities": [{"type": "campaign", "name": "Alpha"}]}
    with httpx.Client(base_url=host.base_url, timeout=60, follow_redirects=False) as c:
        assert c.put("/v1/users/e2e-writer-redir/entities", json=body).status_code == 200
        r = c.delete("/v1/users/e2e-writer-redir/entities/%252e%252e/%252e")
        assert 400 <= r.status_code < 500 and "location" not in r.headers, r.text
        assert c.get("/v1/users/e2e-writer-redir/entities").json()["count"] == 1


def test_the_expired_route_runs_in_the_writer_and_records_each_expiry_once(host: Host) -> None:
    """`POST /expired` reaches the user's writer, which owns the index: repeated reports
    drop an entry once and write one `expired` row."""
    from datetime import UTC, datetime, timedelta

    user = "e2e-writer-expired"
    written = datetime.now(UTC) - timedelta(days=kind_of("metric").ttl_days + 10)  # expired
    past = {"x-entity-memory-now": written.isoformat().replace("+00:00", "Z")}
    metric = {
        "type": "metric",
        "name": "Alpha CPA",
        "content": "CPA of Alpha is $42",
        "metadata": {"kpi": "CPA", "value": 42, "unit": "USD", "campaign": "Alpha"},
    }
    body = {"session_id": "s1", "entities": [metric, {"type": "campaign", "name": "Alpha"}]}
    with httpx.Client(base_url=host.base_url, timeout=60) as c:
        assert c.put(f"/v1/users/{user}/entities", json=body, headers=past).status_code == 200
        # KV's own TTL runs on real time: take the document away as its expiry would.
        host.wrangler(
            "kv", "key", "delete", f"entity:{user}:metric:alpha-cpa", "--binding", "ENTITIES"
        )
        refs = {"entities": [{"type": "metric", "id": "alpha-cpa"}]}
        dropped = [
            c.post(f"/v1/users/{user}/expired", json=refs).json()["dropped"] for _ in range(4)
        ]
    assert dropped == [1, 0, 0, 0]
    index = json.loads(host.answered_index(user))
    assert [e["id"] for e in index["entries"]] == ["alpha"]
    rows = host.d1(
        f"SELECT count(*) AS n FROM entity_versions WHERE user_id = '{user}'"
        " AND change_kind = 'expired'"
    )
    assert rows[0]["n"] == 1
