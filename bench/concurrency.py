"""Concurrent writers on the local host: index drift, lost entities, lost versions.

    .venv/bin/python -m bench.concurrency                       # start a host on a temp dir
    .venv/bin/python -m bench.concurrency --url http://127.0.0.1:8787 --clients 8 --batches 50

Part 1: `--clients` clients each send `--batches` batch upserts of new entities for ONE user,
all at once. Every batch reads the user's index and writes it back whole, so concurrent batches
overwrite each other's index entries (KV is last-writer-wins). Measured: entities in KV (listed
by the export route) against entries in the index before reindex (the drift), then after
`POST /reindex`: entities lost (acknowledged but not in KV) must be 0 and the index must match.

Part 2: `--same-clients` clients upsert the SAME entity `--same-rounds` times each, each upsert
a change. Measured: the end state's version against the highest version any client was given,
and the ledger (`GET .../history`): which version numbers it holds, which are missing, and which
were recorded more than once (two writers that read the same version both write version + 1).
Part 3: `--same-clients` clients mention ONE pain point `--same-rounds` times each, from
separate sessions: its `frequency` must equal the mentions.
Part 4: `POST /expired` raced against writers. `--expired` metrics are written past their TTL
(the clock pinned with `X-Entity-Memory-Now`) and their KV documents deleted, as KV's TTL
would; then `--clients` clients write `--race-batches` batches of new entities while another
client reports each expired metric to `/expired` three times. Measured right after the last
acknowledgement: acknowledged entities lost (not in KV) and unindexed (not in the index), the
expired entries left in the index, and the `expired` ledger rows per metric (must be 1).
Needs a host this bench starts (it edits the host's KV); skipped with `--url`.

With a writer per user (the USER_WRITER Durable Object), the index must already match before
reindex, versions are never shared, and the writer reports its index-key writes
(`X-Index-Writes`): at most one a second per user (KV's per-key limit).
Exit status 1 if an acknowledged entity was lost or the index does not match after reindex.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from tests.e2e.hostproc import Host, start_host

from bench.load import check_loopback, percentile
from entity_memory.domain.kind import kind_of

USER = "conc-user"


def new_entity(client: int, batch: int, i: int) -> dict[str, Any]:
    return {
        "type": "campaign",
        "name": f"Campaign c{client} b{batch} n{i}",
        "content": f"Search campaign {client}-{batch}-{i} on target CPA",
        "importance": 0.5,
        "metadata": {"strategy": "target CPA", "budget": 100 + i},
    }


async def many_batches(base_url: str, args: argparse.Namespace) -> int:
    acked: set[tuple[str, str]] = set()
    index_writes: list[int] = []
    latencies: list[float] = []
    errors: Counter[str] = Counter()
    limits = httpx.Limits(max_connections=args.clients)
    async with httpx.AsyncClient(base_url=base_url, timeout=120, limits=limits) as client:

        async def writer(cid: int) -> None:
            for b in range(args.batches):
                body = {
                    "session_id": f"conc-{cid}",
                    "entities": [new_entity(cid, b, i) for i in range(args.batch_size)],
                }
                started = time.perf_counter()
                resp = await client.put(f"/v1/users/{USER}/entities", json=body)
                latencies.append((time.perf_counter() - started) * 1000)
                if resp.status_code != 200:
                    errors[f"HTTP {resp.status_code} {resp.text[:100]}"] += 1
                    continue
                acked.update((r["type"], r["id"]) for r in resp.json()["results"])
                index_writes.append(int(resp.headers.get("x-index-writes", "0")))

        started = time.perf_counter()
        await asyncio.gather(*(writer(c) for c in range(args.clients)))
        wall = time.perf_counter() - started

        kv = {
            (e["type"], e["id"])
            for e in (await client.get(f"/v1/users/{USER}/export")).json()["entities"]
        }
        index_before = (await client.get(f"/v1/users/{USER}/entities")).json()["entities"]
        repair = (await client.post(f"/v1/users/{USER}/reindex")).json()
        index_after = (await client.get(f"/v1/users/{USER}/entities")).json()["entities"]

    requests = args.clients * args.batches
    before_ids = {(e["type"], e["id"]) for e in index_before}
    after_ids = {(e["type"], e["id"]) for e in index_after}
    lost = acked - kv
    print(
        f"part 1: {args.clients} clients x {args.batches} batches x {args.batch_size} entities"
        f" for one user: {requests} requests in {wall:.1f} s ({requests / wall:.1f} req/s),"
        f" p50 {percentile(latencies, 50):.0f} ms, p95 {percentile(latencies, 95):.0f} ms,"
        f" p99 {percentile(latencies, 99):.0f} ms, errors {sum(errors.values())}"
    )
    for what, n in errors.most_common(5):
        print(f"  error x{n}: {what}")
    drift = len(kv - before_ids)
    print(f"  acknowledged entities: {len(acked)}; in KV: {len(kv)}")
    print(
        f"  index before reindex: {len(index_before)} entries; drift (in KV, not in index):"
        f" {drift} ({100 * drift / max(1, len(kv)):.1f}%)"
    )
    print(f"  reindex: {repair}")
    print(
        f"  index after reindex: {len(index_after)} entries; missing from index:"
        f" {len(kv - after_ids)}; entries without entity: {len(after_ids - kv)}"
    )
    print(f"  entities lost (acknowledged, not in KV): {len(lost)}")
    if index_writes:
        writes = max(index_writes)
        print(
            f"  index key writes by the user's writer: {writes} in {wall:.1f} s"
            f" ({writes / wall:.2f} per second)"
        )
    return len(lost) + len(kv ^ after_ids) + len(kv - before_ids)


async def same_entity(base_url: str, args: argparse.Namespace) -> None:
    given: list[int] = []
    errors: Counter[str] = Counter()
    path = f"/v1/users/{USER}-same/entities"
    async with httpx.AsyncClient(base_url=base_url, timeout=120) as client:

        async def writer(cid: int) -> None:
            for r in range(args.same_rounds):
                item = {
                    "type": "campaign",
                    "id": "contested",
                    "name": "Contested Campaign",
                    "content": f"budget set by client {cid} in round {r}",
                    "importance": 0.5,
                    "metadata": {"budget": 1000 * cid + r},
                }
                resp = await client.put(
                    path, json={"session_id": f"same-{cid}", "entities": [item]}
                )
                if resp.status_code != 200:
                    errors[f"HTTP {resp.status_code} {resp.text[:100]}"] += 1
                    continue
                given.append(resp.json()["results"][0]["version"])

        await asyncio.gather(*(writer(c) for c in range(args.same_clients)))
        final = (await client.get(f"{path}/campaign/contested")).json()
        history = (
            await client.get(f"{path}/campaign/contested/history", params={"limit": 1000})
        ).json()["versions"]

    writes = args.same_clients * args.same_rounds
    recorded = Counter(v["version"] for v in history)
    top = max(given) if given else 0
    missing = sorted(set(range(1, top + 1)) - set(recorded))
    duplicated = {v: n for v, n in sorted(recorded.items()) if n > 1}
    given_counts = Counter(given)
    print(
        f"part 2: {args.same_clients} clients x {args.same_rounds} upserts of one entity"
        f" ({writes} writes, {sum(errors.values())} errors)"
    )
    print(
        f"  highest version returned to a client: {top}; final stored version: {final['version']}"
    )
    shared = sum(1 for n in given_counts.values() if n > 1)
    print(
        f"  distinct versions returned: {len(given_counts)} of {len(given)} responses;"
        f" versions returned to more than one client: {shared}"
    )
    print(
        f"  ledger rows: {len(history)}; distinct versions: {len(recorded)};"
        f" missing versions in 1..{top}: {len(missing)}"
        f"{' ' + str(missing[:20]) if missing else ''}; versions recorded more than once:"
        f" {len(duplicated)}"
    )
    print(f"  writes whose content was overwritten without a version of its own: {writes - top}")
    print(f"  final state is from the highest version: {final['version'] == top}")


async def one_pain_point(base_url: str, args: argparse.Namespace) -> int:
    path = f"/v1/users/{USER}-pain/entities"
    async with httpx.AsyncClient(base_url=base_url, timeout=120) as client:

        async def writer(cid: int) -> None:
            for r in range(args.same_rounds):
                item = {
                    "type": "pain_point",
                    "name": "Reporting takes too long",
                    "content": f"mentioned by client {cid} in session {r}",
                    "importance": 0.6,
                }
                body = {"session_id": f"pain-{cid}-{r}", "entities": [item]}
                await client.put(path, json=body)

        await asyncio.gather(*(writer(c) for c in range(args.same_clients)))
        stored = (await client.get(f"{path}/pain_point/reporting-takes-too-long")).json()
    mentions = args.same_clients * args.same_rounds
    frequency = stored["metadata"]["frequency"]
    print(f"part 3: one pain point mentioned {mentions} times: frequency {frequency}")
    return abs(mentions - frequency)


def expiring_metric(i: int) -> dict[str, Any]:
    return {
        "type": "metric",
        "name": f"Expiring metric {i}",
        "content": f"CPA of campaign {i} was ${40 + i}",
        "importance": 0.5,
        "metadata": {"kpi": "CPA", "value": 40 + i, "unit": "USD", "campaign": f"C{i}"},
    }


async def plant_expired(client: httpx.AsyncClient, host: Host, user: str, n: int) -> list[str]:
    """`n` metrics written longer ago than a metric lives whose KV documents are gone."""
    days = kind_of("metric").ttl_days + 10
    past = (datetime.now(UTC) - timedelta(days=days)).isoformat().replace("+00:00", "Z")
    body = {"session_id": "old", "entities": [expiring_metric(i) for i in range(n)]}
    resp = await client.put(
        f"/v1/users/{user}/entities", json=body, headers={"x-entity-memory-now": past}
    )
    resp.raise_for_status()
    ids = [r["id"] for r in resp.json()["results"]]
    keys = Path(host.persist_to) / "expired-keys.json"
    keys.write_text(json.dumps([f"entity:{user}:metric:{i}" for i in ids]))
    host.wrangler("kv", "bulk", "delete", str(keys), "--binding", "ENTITIES", "--force")
    return ids


async def expired_race(host: Host | None, args: argparse.Namespace) -> int:
    if host is None:
        print("part 4: skipped (needs a host this bench starts: it deletes KV keys)")
        return 0
    user = f"{USER}-exp"
    acked: set[tuple[str, str]] = set()
    reports: list[int] = []
    errors: Counter[str] = Counter()
    limits = httpx.Limits(max_connections=args.clients + 1)
    async with httpx.AsyncClient(base_url=host.base_url, timeout=120, limits=limits) as client:
        expired = await plant_expired(client, host, user, args.expired)

        async def writer(cid: int) -> None:
            for b in range(args.race_batches):
                body = {
                    "session_id": f"race-{cid}",
                    "entities": [new_entity(cid, b, i) for i in range(args.batch_size)],
                }
                resp = await client.put(f"/v1/users/{user}/entities", json=body)
                if resp.status_code != 200:
                    errors[f"PUT {resp.status_code} {resp.text[:100]}"] += 1
                    continue
                acked.update((r["type"], r["id"]) for r in resp.json()["results"])

        async def expirer() -> None:
            for metric_id in expired * 3:
                refs = {"entities": [{"type": "metric", "id": metric_id}]}
                resp = await client.post(f"/v1/users/{user}/expired", json=refs)
                if resp.status_code != 200:
                    errors[f"expired {resp.status_code} {resp.text[:100]}"] += 1
                    continue
                reports.append(resp.json()["dropped"])

        started = time.perf_counter()
        await asyncio.gather(expirer(), *(writer(c) for c in range(args.clients)))
        wall = time.perf_counter() - started
        kv = {
            (e["type"], e["id"])
            for e in (await client.get(f"/v1/users/{user}/export")).json()["entities"]
        }
        listed = (await client.get(f"/v1/users/{user}/entities")).json()["entities"]
        rows = []
        for metric_id in expired:
            history = f"/v1/users/{user}/entities/metric/{metric_id}/history"
            versions = (await client.get(history)).json()["versions"]
            rows.append(sum(1 for v in versions if v["changeKind"] == "expired"))
    indexed = {(e["type"], e["id"]) for e in listed}
    lost, unindexed = acked - kv, acked - indexed
    left = {("metric", i) for i in expired} & indexed
    print(
        f"part 4: /expired raced against {args.clients} writers: {len(reports)} reports of"
        f" {len(expired)} expired metrics, {args.clients * args.race_batches} batches in"
        f" {wall:.1f} s, errors {sum(errors.values())}"
    )
    for what, n in errors.most_common(5):
        print(f"  error x{n}: {what}")
    print(f"  acknowledged entities: {len(acked)}; lost: {len(lost)}; unindexed: {len(unindexed)}")
    print(
        f"  expired entries dropped: {sum(reports)} of {len(expired)}; left in the index:"
        f" {len(left)}; `expired` ledger rows per metric: min {min(rows, default=0)},"
        f" max {max(rows, default=0)}"
    )
    wrong_rows = sum(1 for n in rows if n != 1)
    return len(lost) + len(unindexed) + len(left) + wrong_rows + sum(errors.values())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", help="a running host on loopback (default: start one)")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--batches", type=int, default=50)
    parser.add_argument("--batch-size", type=int, default=3)
    parser.add_argument("--same-clients", type=int, default=8)
    parser.add_argument("--same-rounds", type=int, default=10)
    parser.add_argument("--expired", type=int, default=24)
    parser.add_argument("--race-batches", type=int, default=15)
    args = parser.parse_args()
    if args.url:
        return run(check_loopback(args.url), None, args)
    with (
        tempfile.TemporaryDirectory(prefix="conc-") as tmp,
        start_host(Path(tmp) / "v3", ["--var", "ALLOW_CLOCK_OVERRIDE=1"]) as host,
    ):
        print(f"host ready on {host.base_url} in {host.startup_ms} ms", flush=True)
        return run(host.base_url, host, args)


def run(base_url: str, host: Host | None, args: argparse.Namespace) -> int:
    failures = asyncio.run(many_batches(base_url, args))
    asyncio.run(same_entity(base_url, args))
    failures += asyncio.run(one_pain_point(base_url, args))
    failures += asyncio.run(expired_race(host, args))
    print(f"\nlost, mis-indexed (before or after reindex), miscounted or mis-expired: {failures}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
