"""Load the local host with a realistic mix and check afterwards that nothing was lost.

    .venv/bin/python -m bench.load                          # start a host on a temp dir
    .venv/bin/python -m bench.load --url http://127.0.0.1:8787 --clients 8 --requests 400

Loopback only, bounded by `--requests` (total) and `--duration` (seconds). N concurrent
clients over a few users send context reads (60%), batch upserts (30%) and session
extractions (10%; the host has no LLM, so extraction runs the offline rules extractor or falls
back to it). Prints throughput, p50/p95/p99 latency per kind and error counts. Then verifies:
every entity a client got back from an upsert or extraction is readable with a version at least
the one returned, and after `POST /reindex` each user's index has exactly as many entries as
KV has `entity:<user>:` keys (counted by the export route, which lists KV). Exit status 1 if
anything was lost.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx
from tests.e2e.hostproc import start_host

REPO = Path(__file__).resolve().parents[1]

LOOPBACK = {"127.0.0.1", "localhost", "::1"}
KINDS = ("context", "upsert", "extract")
WEIGHTS = (0.6, 0.3, 0.1)

CAMPAIGNS = ["Brand Search", "Retargeting", "Shopping Feed", "Prospecting Video", "Generic Search"]
STRATEGIES = ["manual CPC", "target CPA", "maximize conversions", "target ROAS"]
TASKS = [
    "Review the Brand Search bids and CPA trend",
    "Weekly summary for the retargeting campaigns",
    "Why did ROAS drop on Shopping Feed?",
    "Plan budget changes for next month",
    "Check conversion tracking before the launch",
]
CONVERSATIONS = [
    [
        "The {c} campaign is on {s} with a ${b} daily budget and the CPA is ${v}.",
        "Honestly the conversion tracking gaps are killing us.",
        "I prefer short bullet summaries with numbers first.",
    ],
    [
        "Let us switch the {c} campaign to target CPA at ${v}, manual bids keep overshooting.",
        "The Retargeting campaign ROAS improved to {r}x and we decided to raise its budget.",
    ],
    [
        "We decided to pause the {c} campaign because ROAS fell to {r}x.",
        "Please keep reports short, numbers first.",
    ],
]


def check_loopback(url: str) -> str:
    host = urlparse(url).hostname
    if host not in LOOPBACK:
        sys.exit(f"refusing {url}: this script only drives a host on loopback")
    return url.rstrip("/")


@contextmanager
def host_url(url: str | None, extra: list[str] | None = None) -> Iterator[str]:
    if url:
        yield check_loopback(url)
        return
    with (
        tempfile.TemporaryDirectory(prefix="load-") as tmp,
        start_host(Path(tmp) / "v3", extra or []) as host,
    ):
        print(f"host ready on {host.base_url} in {host.startup_ms} ms", flush=True)
        yield check_loopback(host.base_url)


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


def entity(rng: random.Random, user_pool: int) -> dict[str, Any]:
    n = rng.randrange(user_pool)
    kind = rng.choice(["campaign", "metric", "decision", "pain_point", "preference"])
    value = round(rng.uniform(10, 90), 2)
    if kind == "campaign":
        return {
            "type": "campaign",
            "name": f"Campaign {n}",
            "content": f"Search campaign on {rng.choice(STRATEGIES)}, budget ${value:g}/day",
            "importance": round(rng.uniform(0.3, 1), 2),
            "metadata": {"strategy": rng.choice(STRATEGIES), "budget": value},
        }
    if kind == "metric":
        return {
            "type": "metric",
            "name": f"Campaign {n} CPA",
            "content": f"CPA of Campaign {n} is ${value:g}",
            "importance": 0.7,
            "metadata": {"kpi": "CPA", "value": value, "unit": "USD", "campaign": f"Campaign {n}"},
        }
    if kind == "decision":
        return {
            "type": "decision",
            "name": f"Decision {n}",
            "content": f"Moved Campaign {n} to {rng.choice(STRATEGIES)}",
            "importance": 0.8,
            "metadata": {"action": f"switch bidding of Campaign {n}", "rationale": "CPA too high"},
        }
    if kind == "pain_point":
        return {
            "type": "pain_point",
            "name": f"Pain {n}",
            "content": f"Tracking gaps on Campaign {n} after tag changes ({value:g}% missing)",
            "importance": 0.75,
            "metadata": {"severity": rng.choice(["low", "medium", "high"])},
        }
    return {
        "type": "preference",
        "name": f"Preference {n}",
        "content": f"Wants {rng.choice(['short', 'detailed'])} reports, numbers first",
        "importance": 0.9,
        "metadata": {"category": "reporting", "value": f"style {value:g}"},
    }


@dataclass
class Stats:
    latency: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: Counter[str] = field(default_factory=Counter)
    statuses: Counter[tuple[str, int]] = field(default_factory=Counter)
    extractors: Counter[str] = field(default_factory=Counter)
    #: (user, type, id) -> the highest version a client was told about.
    acked: dict[tuple[str, str, str], int] = field(default_factory=dict)
    sent: int = 0

    def ack(self, user: str, results: list[dict[str, Any]]) -> None:
        for r in results:
            key = (user, r["type"], r["id"])
            self.acked[key] = max(self.acked.get(key, 0), r["version"])


async def one_request(
    client: httpx.AsyncClient, rng: random.Random, users: list[str], stats: Stats, n: int, cid: int
) -> None:
    kind = rng.choices(KINDS, WEIGHTS)[0]
    user = rng.choice(users)
    if kind == "context":
        method, path = "POST", f"/v1/users/{user}/context"
        body: dict[str, Any] = {"task": rng.choice(TASKS), "limit": 20, "max_tokens": 2000}
    elif kind == "upsert":
        method, path = "PUT", f"/v1/users/{user}/entities"
        batch = [entity(rng, 40) for _ in range(rng.randint(3, 10))]
        body = {"session_id": f"load-{cid}-{n}", "entities": batch}
    else:
        method, path = "POST", f"/v1/users/{user}/sessions/load-{cid}-{n}/extract"
        lines = rng.choice(CONVERSATIONS)
        fill = {
            "c": rng.choice(CAMPAIGNS),
            "s": rng.choice(STRATEGIES),
            "b": rng.randint(50, 300),
            "v": rng.randint(20, 80),
            "r": round(rng.uniform(0.8, 5), 1),
        }
        messages = [{"role": "user", "content": t.format(**fill)} for t in lines]
        messages.insert(1, {"role": "assistant", "content": "Noted. Anything else?"})
        body = {"messages": messages}
    started = time.perf_counter()
    try:
        resp = await client.request(method, path, json=body)
    except httpx.HTTPError as exc:
        stats.errors[f"{kind}: {type(exc).__name__}"] += 1
        return
    finally:
        stats.latency[kind].append((time.perf_counter() - started) * 1000)
    stats.statuses[(kind, resp.status_code)] += 1
    if resp.status_code not in (200, 202):  # an extraction is queued (202) as a job
        stats.errors[f"{kind}: HTTP {resp.status_code} {resp.text[:120]}"] += 1
        return
    data = resp.json()
    if kind in ("upsert", "extract"):
        stats.ack(user, data.get("results", []))
    if kind == "extract":
        stats.extractors[str(data.get("extractor"))] += 1


async def drive(base_url: str, args: argparse.Namespace) -> Stats:
    users = [f"load-user-{i}" for i in range(args.users)]
    stats = Stats()
    deadline = time.monotonic() + args.duration
    counter = iter(range(args.requests))
    limits = httpx.Limits(max_connections=args.clients)
    async with httpx.AsyncClient(base_url=base_url, timeout=60, limits=limits) as client:

        async def worker(cid: int) -> None:
            rng = random.Random(args.seed * 1000 + cid)
            for n in counter:
                if time.monotonic() > deadline:
                    return
                stats.sent += 1
                await one_request(client, rng, users, stats, n, cid)

        started = time.perf_counter()
        await asyncio.gather(*(worker(c) for c in range(args.clients)))
        stats.latency["_wall"] = [(time.perf_counter() - started) * 1000]
    return stats


async def verify(base_url: str, users: list[str], stats: Stats) -> dict[str, int]:
    out = Counter[str]()
    async with httpx.AsyncClient(base_url=base_url, timeout=120) as client:
        for (user, etype, eid), version in sorted(stats.acked.items()):
            resp = await client.get(f"/v1/users/{user}/entities/{etype}/{eid}")
            out["entities checked"] += 1
            if resp.status_code != 200:
                out["lost (not found)"] += 1
                print(f"  LOST {user}/{etype}/{eid}: HTTP {resp.status_code}")
            elif resp.json()["version"] < version:
                out["lost (older version)"] += 1
                print(f"  OLDER {user}/{etype}/{eid}: {resp.json()['version']} < {version}")
        for user in users:
            before = (await client.get(f"/v1/users/{user}/entities")).json()["count"]
            repair = (await client.post(f"/v1/users/{user}/reindex")).json()
            after = (await client.get(f"/v1/users/{user}/entities")).json()["count"]
            kv_keys = len((await client.get(f"/v1/users/{user}/export")).json()["entities"])
            print(
                f"  {user}: KV entity keys {kv_keys}, index before reindex {before},"
                f" after {after} (reindex {repair})"
            )
            out["index drift before reindex"] += kv_keys - before
            out["index mismatch after reindex"] += abs(kv_keys - after)
    return dict(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", help="a running host on loopback (default: start one)")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=400, help="total, all clients")
    parser.add_argument("--duration", type=float, default=120, help="seconds, at most")
    parser.add_argument("--users", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    with host_url(args.url) as base_url:
        stats = asyncio.run(drive(base_url, args))
        wall_s = stats.latency.pop("_wall")[0] / 1000
        total = sum(len(v) for v in stats.latency.values())
        print(f"\n{total} requests by {args.clients} clients in {wall_s:.1f} s:"
              f" {total / wall_s:.1f} req/s")  # fmt: skip
        print(f"{'kind':<8} {'count':>6} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'errors':>7}")
        for kind in KINDS:
            lat = stats.latency.get(kind, [])
            errs = sum(n for k, n in stats.errors.items() if k.startswith(kind))
            print(
                f"{kind:<8} {len(lat):>6} {percentile(lat, 50):>8.1f} {percentile(lat, 95):>8.1f}"
                f" {percentile(lat, 99):>8.1f} {errs:>7}"
            )
        print(
            "statuses: " + ", ".join(f"{k} {s}={n}" for (k, s), n in sorted(stats.statuses.items()))
        )
        if stats.extractors:
            print("extractors: " + ", ".join(f"{k}={n}" for k, n in stats.extractors.items()))
        for what, n in stats.errors.most_common(10):
            print(f"  error x{n}: {what}")
        print("\nverifying (GET every acknowledged entity, reindex, count KV keys):")
        users = [f"load-user-{i}" for i in range(args.users)]
        found = asyncio.run(verify(base_url, users, stats))
    lost = found.get("lost (not found)", 0) + found.get("lost (older version)", 0)
    lost += found.get("index mismatch after reindex", 0)
    for what, n in found.items():
        print(f"{what}: {n}")
    print(f"entities lost: {lost}")
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
