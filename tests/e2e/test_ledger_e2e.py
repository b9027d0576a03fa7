"""The D1 ledger end to end: real local D1 behind the host, queried directly with wrangler."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx
import pytest

from .hostproc import REPO, Host

pytestmark = pytest.mark.e2e


def campaign(**meta: Any) -> dict[str, Any]:
    return {
        "type": "campaign",
        "name": "Campaign Alpha",
        "content": f"Alpha on {meta.get('strategy', 'target CPA')}",
        "importance": 0.8,
        "metadata": {"strategy": "target CPA", "budget": 150, **meta},
    }


def metric(name: str, kpi: str, value: float) -> dict[str, Any]:
    return {
        "type": "metric",
        "name": name,
        "content": f"{kpi} is {value}",
        "importance": 0.8,
        "metadata": {"kpi": kpi, "value": value, "campaign": "Campaign Alpha"},
    }


def upsert(c: httpx.Client, user: str, session: str, *entities: dict) -> httpx.Response:
    r = c.put(f"/v1/users/{user}/entities", json={"session_id": session, "entities": entities})
    assert r.status_code == 200, r.text
    return r


@pytest.fixture
def c(host: Host) -> httpx.Client:
    return httpx.Client(base_url=host.base_url, timeout=60)


def test_history_shows_versions_and_the_contradicted_field(host: Host, c: httpx.Client) -> None:
    first = upsert(c, "e2e-hist", "s1", campaign())
    assert first.headers["x-d1-statements"] == "calls=1,statements=2"
    upsert(c, "e2e-hist", "s2", campaign(budget=200))
    upsert(c, "e2e-hist", "s3", campaign(strategy="maximize conversions"))
    r = c.get("/v1/users/e2e-hist/entities/campaign/campaign-alpha/history")
    assert r.status_code == 200, r.text
    versions = r.json()["versions"]
    assert [(v["version"], v["changeKind"], v["sessionId"]) for v in versions] == [
        (3, "contradicted", "s3"),
        (2, "contradicted", "s2"),
        (1, "created", "s1"),
    ]
    assert versions[0]["changes"]["metadata.strategy"] == {
        "old": "target CPA",
        "new": "maximize conversions",
    }
    assert versions[1]["changes"]["metadata.budget"] == {"old": 150, "new": 200}
    rows = host.d1(
        "SELECT version, change_kind, session_id FROM entity_versions"
        " WHERE user_id = 'e2e-hist' ORDER BY seq"
    )
    assert [(r["version"], r["change_kind"], r["session_id"]) for r in rows] == [
        (1, "created", "s1"),
        (2, "contradicted", "s2"),
        (3, "contradicted", "s3"),
    ]
    missing = c.get("/v1/users/e2e-hist/entities/campaign/nope/history")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"


def test_no_op_re_upsert_writes_nothing(host: Host, c: httpx.Client) -> None:
    upsert(c, "e2e-noop", "s1", campaign(), metric("Alpha CPA", "CPA", 42))
    again = upsert(c, "e2e-noop", "s1", campaign(), metric("Alpha CPA", "CPA", 42))
    assert [r["status"] for r in again.json()["results"]] == ["unchanged", "unchanged"]
    # The user's writer reads its own copy: no KV operation at all.
    assert again.headers["x-kv-operations"] == "none"
    # One read confirms the ledger already holds these versions; nothing is written.
    assert again.headers["x-d1-statements"] == "calls=1,statements=1"
    rows = host.d1("SELECT COUNT(*) AS n FROM entity_versions WHERE user_id = 'e2e-noop'")
    assert rows == [{"n": 2}]


def test_trends_know_which_direction_is_good(c: httpx.Client) -> None:
    for i, (cpa, roas) in enumerate([(52, 3.1), (47, 2.7), (41, 2.2)]):
        upsert(
            c,
            "e2e-trend",
            f"s{i}",
            metric("Alpha CPA", "CPA", cpa),
            metric("Alpha ROAS", "ROAS", roas),
            {
                "type": "pain_point",
                "name": "Tracking gaps",
                "content": f"conversions missing again ({i})",
                "metadata": {"severity": "high"},
            },
        )
    body = c.get("/v1/users/e2e-trend/trends").json()
    by_id = {m["id"]: m for m in body["metrics"]}
    cpa = by_id["alpha-cpa"]
    assert (cpa["first"], cpa["last"], cpa["min"], cpa["max"], cpa["observations"]) == (
        52,
        41,
        41,
        52,
        3,
    )
    assert (cpa["direction"], cpa["trend"]) == ("down", "improving")
    assert (by_id["alpha-roas"]["direction"], by_id["alpha-roas"]["trend"]) == (
        "down",
        "worsening",
    )
    [pain] = body["painPoints"]
    assert pain["frequency"] == 3 and pain["resolved"] is False
    assert pain["firstSeen"] <= pain["lastSeen"]


def test_changes_since_returns_only_later_changes(c: httpx.Client) -> None:
    upsert(c, "e2e-chg", "s1", campaign(), metric("Alpha CPA", "CPA", 50))
    time.sleep(0.05)
    since = int(time.time() * 1000)
    time.sleep(0.05)
    upsert(c, "e2e-chg", "s2", metric("Alpha CPA", "CPA", 44))
    body = c.get("/v1/users/e2e-chg/changes", params={"since": since}).json()
    assert [(e["type"], e["id"]) for e in body["entities"]] == [("metric", "alpha-cpa")]
    [change] = body["entities"][0]["changes"]
    assert change["changeKind"] == "contradicted"
    assert change["changes"]["metadata.value"] == {"old": 50, "new": 44}
    later = c.get("/v1/users/e2e-chg/changes", params={"since": int(time.time() * 1000) + 1})
    assert later.json()["entities"] == []


def test_changes_after_a_delete_show_the_entity_deleted_with_its_own_version(
    c: httpx.Client,
) -> None:
    upsert(c, "e2e-del", "s1", campaign())
    time.sleep(0.05)
    since = int(time.time() * 1000)
    time.sleep(0.05)
    upsert(c, "e2e-del", "s2", campaign(budget=300))
    assert c.delete("/v1/users/e2e-del/entities/campaign/campaign-alpha").status_code == 200
    history = c.get("/v1/users/e2e-del/entities/campaign/campaign-alpha/history").json()
    assert [(v["version"], v["changeKind"]) for v in history["versions"]][:2] == [
        (3, "deleted"),
        (2, "contradicted"),
    ]
    [group] = c.get("/v1/users/e2e-del/changes", params={"since": since}).json()["entities"]
    assert group["status"] == "deleted" and "current" not in group
    assert [ch["version"] for ch in group["changes"]] == [2, 3]


def test_export_round_trips(c: httpx.Client) -> None:
    upsert(c, "e2e-exp", "s1", campaign(), metric("Alpha CPA", "CPA", 50))
    upsert(c, "e2e-exp", "s2", metric("Alpha CPA", "CPA", 45))
    doc = c.get("/v1/users/e2e-exp/export").json()
    assert doc["userId"] == "e2e-exp"
    for entity in doc["entities"]:
        got = c.get(f"/v1/users/e2e-exp/entities/{entity['type']}/{entity['id']}").json()
        assert got == entity
    assert len(doc["history"]) == 3
    assert [o["value"] for o in doc["metricObservations"]] == [50, 45]
    # The exported entities upsert into a new user as the same facts.
    copies = [
        {k: e[k] for k in ("type", "name", "content", "importance", "metadata")}
        for e in doc["entities"]
    ]
    for copy in copies:
        copy["metadata"].pop("history", None)
    upsert(c, "e2e-exp-copy", "import", *copies)
    copied = c.get("/v1/users/e2e-exp-copy/export").json()["entities"]
    assert sorted((e["id"], e["content"]) for e in copied) == sorted(
        (e["id"], e["content"]) for e in doc["entities"]
    )


def test_forget_user_erases_kv_and_d1_and_spares_others(host: Host, c: httpx.Client) -> None:
    for user in ("e2e-gone", "e2e-gone2"):
        upsert(c, user, "s1", campaign(), metric("Alpha CPA", "CPA", 50))
    r = c.delete("/v1/users/e2e-gone")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["complete"] is True and body["kvKeysDeleted"] == 3
    assert body["ledgerRowsDeleted"]["entity_versions"] == 2
    assert host.kv_list("entity:e2e-gone:") == []
    assert host.kv_list("index:e2e-gone:") == []
    for table in ("entity_versions", "metric_observations", "processed_sessions", "user_activity"):
        assert host.d1(f"SELECT * FROM {table} WHERE user_id = 'e2e-gone'") == []
    assert c.get("/v1/users/e2e-gone/entities").json()["count"] == 0
    assert c.get("/v1/users/e2e-gone/export").json()["entities"] == []
    assert c.get("/v1/users/e2e-gone/entities/campaign/campaign-alpha").status_code == 404
    # The other user, whose id shares the prefix, is untouched.
    assert len(host.kv_list("entity:e2e-gone2:")) == 2
    assert host.d1("SELECT COUNT(*) AS n FROM entity_versions WHERE user_id = 'e2e-gone2'") == [
        {"n": 2}
    ]


async def test_racing_batches_and_a_lost_index_entry_are_repaired(
    host: Host, c: httpx.Client
) -> None:
    user = "e2e-race"
    batches = [
        [{"type": "campaign", "name": f"Race {b}-{i}", "content": "x"} for i in range(10)]
        for b in range(4)
    ]
    async with httpx.AsyncClient(base_url=host.base_url, timeout=60) as ac:
        await asyncio.gather(
            *(
                ac.put(
                    f"/v1/users/{user}/entities", json={"session_id": f"s{b}", "entities": batch}
                )
                for b, batch in enumerate(batches)
            )
        )
    assert len(host.kv_list(f"entity:{user}:")) == 40  # every entity is safe in KV
    # Whatever the race did, make the loss certain: the index as one writer saw it.
    index = json.loads(host.kv_get(f"index:{user}:entities"))
    stale = {"entries": index["entries"][:5]}
    host.wrangler(
        "kv", "key", "put", f"index:{user}:entities", json.dumps(stale), "--binding", "ENTITIES"
    )
    assert c.get(f"/v1/users/{user}/entities").json()["count"] == 5
    r = c.post(f"/v1/users/{user}/reindex")
    assert r.status_code == 200, r.text
    assert r.json()["entries"] == 40 and r.json()["restored"] == 35
    assert c.get(f"/v1/users/{user}/entities").json()["count"] == 40
    found = c.post(f"/v1/users/{user}/context", json={"task": "Race 3-7"}).json()
    assert found["entities"][0]["name"] == "Race 3-7"


def test_cron_trigger_reindexes_recent_writers(host: Host, c: httpx.Client) -> None:
    upsert(c, "e2e-cron", "s1", campaign(), metric("Alpha CPA", "CPA", 50))
    host.wrangler(
        "kv", "key", "put", "index:e2e-cron:entities", '{"entries": []}', "--binding", "ENTITIES"
    )
    r = c.get("/__scheduled", params={"cron": "*/30 * * * *"})
    assert r.status_code == 200, r.text
    assert c.get("/v1/users/e2e-cron/entities").json()["count"] == 2


def test_migrations_were_applied_once_each(host: Host) -> None:
    rows = host.d1("SELECT name FROM d1_migrations ORDER BY id")
    on_disk = sorted(p.name for p in (REPO / "migrations").glob("*.sql"))
    assert len(on_disk) >= 3  # the ledger, user activity, api tokens: each applied on top
    assert [r["name"] for r in rows] == on_disk
