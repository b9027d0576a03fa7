"""Crash bench: writers keep writing while the local host is killed (SIGKILL) and restarted.

    .venv/bin/python -m bench.crash                       # 4 writers x 25 batches x 10, 10 kills
    .venv/bin/python -m bench.crash --writers 8 --batches 50 --size 5 --kills 20 --seed 7

`--writers` clients send `--batches` batch upserts of `--size` new entities each, all for ONE
user (so every write goes through the same single writer). A batch is retried, with the same
session id, until it is answered 200: a connection error (the host is down) or a 5xx waits and
tries again. `--kills` times, at random moments under load, the host's whole process group
(Node, Pyodide, workerd with KV and D1) is killed with SIGKILL, mid-request, and a new host is
started on the same state directory. The moments are drawn as points of the write count (so
every kill lands while writes are in flight, however fast the machine is), each followed by a
random delay of up to `--jitter` seconds, so it lands anywhere inside a request.

Once every batch is acknowledged, what the user's memory holds is read straight from the
host's state: each acknowledged entity must be in KV at the version it was answered (or later),
be in the index, and have its version in the ledger, with no version recorded twice. Printed:
acknowledged, present in KV, indexed, in the ledger, lost (acknowledged, not in KV), and the
kills and retries. Exit status 1 if anything acknowledged is missing anywhere.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import sys
import tempfile
import time
from collections import Counter
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from tests.e2e.hostproc import Host, start_host

USER = "crash-user"
#: Between retries of a batch the host did not answer (it may be restarting).
RETRY_WAIT_S = 0.25


@dataclass
class Service:
    """The host, restarted on the same state after each kill."""

    persist_dir: Path
    host: Host | None = None
    _running: AbstractContextManager[Host] | None = None
    restarts_ms: list[int] = field(default_factory=list)

    def start(self) -> None:
        started = time.monotonic()
        self._running = start_host(self.persist_dir)
        self.host = self._running.__enter__()
        self.restarts_ms.append(int((time.monotonic() - started) * 1000))

    def kill(self) -> None:
        assert self.host is not None and self._running is not None
        os.killpg(self.host.process.pid, signal.SIGKILL)
        self.host.process.wait(timeout=30)
        self._running.__exit__(None, None, None)
        self.host = None

    def stop(self) -> None:
        if self._running is not None and self.host is not None:
            self._running.__exit__(None, None, None)

    @property
    def url(self) -> str | None:
        return None if self.host is None else self.host.base_url


@dataclass
class Tally:
    #: (entity id) -> the version the last 200 answered for it.
    acknowledged: dict[str, int] = field(default_factory=dict)
    batches_done: int = 0
    retries: Counter[str] = field(default_factory=Counter)


def batch(writer: int, number: int, size: int) -> dict[str, object]:
    return {
        "session_id": f"crash-w{writer}-b{number}",
        "entities": [
            {
                "type": "campaign",
                "name": f"Crash w{writer} b{number} n{i}",
                "content": f"Search campaign {writer}-{number}-{i} on target CPA",
                "metadata": {"budget": 100 + i},
            }
            for i in range(size)
        ],
    }


async def write_all(service: Service, tally: Tally, writer: int, args: argparse.Namespace) -> None:
    async with httpx.AsyncClient(timeout=120) as client:
        for number in range(args.batches):
            body = batch(writer, number, args.size)
            while True:
                url = service.url
                if url is None:
                    tally.retries["host down"] += 1
                    await asyncio.sleep(RETRY_WAIT_S)
                    continue
                try:
                    reply = await client.put(f"{url}/v1/users/{USER}/entities", json=body)
                except httpx.HTTPError as exc:
                    tally.retries[type(exc).__name__] += 1
                    await asyncio.sleep(RETRY_WAIT_S)
                    continue
                if reply.status_code == 200:
                    for result in reply.json()["results"]:
                        tally.acknowledged[result["id"]] = result["version"]
                    tally.batches_done += 1
                    break
                tally.retries[f"HTTP {reply.status_code}"] += 1
                await asyncio.sleep(RETRY_WAIT_S)


async def kill_at_random(service: Service, tally: Tally, args: argparse.Namespace) -> int:
    rng = random.Random(args.seed)
    total = args.writers * args.batches
    # Kill points drawn over the first 90% of the batches, so the last kill is under load too.
    points = sorted(rng.sample(range(1, max(2, int(total * 0.9))), args.kills))
    kills = 0
    for point in points:
        while tally.batches_done < point:
            await asyncio.sleep(0.02)
        await asyncio.sleep(rng.uniform(0, args.jitter))
        await asyncio.to_thread(service.kill)
        kills += 1
        print(f"  kill {kills}: after {tally.batches_done} batches acknowledged", flush=True)
        await asyncio.to_thread(service.start)
    return kills


async def load(service: Service, tally: Tally, args: argparse.Namespace) -> int:
    writers = [write_all(service, tally, w, args) for w in range(args.writers)]
    results = await asyncio.gather(kill_at_random(service, tally, args), *writers)
    kills: int = results[0]
    return kills


def check(host: Host, tally: Tally) -> int:
    """What the host's state holds of the acknowledged entities; the number missing."""
    prefix = f"entity:{USER}:campaign:"
    in_kv: dict[str, int] = {}
    for key in host.kv_list(prefix):
        name = key["name"]
        doc = json.loads(host.kv_get(name))
        in_kv[name.removeprefix(prefix)] = int(doc["version"])
    raw = host.answered_index(USER)
    indexed = {e["id"] for e in json.loads(raw)["entries"]} if raw else set()
    rows = host.d1(
        f"SELECT entity_id, version, change_kind FROM entity_versions WHERE user_id = '{USER}'"
    )
    versions = Counter((r["entity_id"], r["version"]) for r in rows)
    created = {r["entity_id"] for r in rows if r["change_kind"] == "created"}
    acked = tally.acknowledged
    lost = [i for i in acked if i not in in_kv]
    behind = [i for i in acked if i in in_kv and in_kv[i] < acked[i]]
    unindexed = [i for i in acked if i not in indexed]
    unrecorded = [i for i, v in acked.items() if (i, v) not in versions]
    twice = [k for k, n in versions.items() if n > 1]
    print(f"acknowledged entities:        {len(acked)}")
    print(f"present in KV:                {len(acked) - len(lost)}  (lost: {len(lost)})")
    print(f"  at the answered version:    {len(acked) - len(lost) - len(behind)}")
    print(f"indexed:                      {len(acked) - len(unindexed)}")
    print(f"ledger has the version:       {len(acked) - len(unrecorded)}")
    print(f"  recorded as created:        {len(created & set(acked))}")
    print(f"  versions recorded twice:    {len(twice)}")
    for label, ids in (("lost", lost), ("unindexed", unindexed), ("unrecorded", unrecorded)):
        if ids:
            print(f"  {label}: {sorted(ids)[:10]}")
    return len(lost) + len(behind) + len(unindexed) + len(unrecorded) + len(twice)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--batches", type=int, default=25, help="per writer")
    parser.add_argument("--size", type=int, default=10, help="entities per batch")
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--jitter", type=float, default=0.5, help="max seconds after a kill point")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="crash-") as tmp:
        service = Service(Path(tmp) / "v3")
        service.start()
        tally = Tally()
        started = time.monotonic()
        try:
            kills = asyncio.run(load(service, tally, args))
            elapsed = time.monotonic() - started
            assert service.host is not None
            print(f"\nkills: {kills}; batches: {tally.batches_done}; {elapsed:.0f} s")
            print(f"retries: {dict(tally.retries) or 0}")
            restarts = service.restarts_ms[1:]
            if restarts:
                print(f"restart to ready: median {sorted(restarts)[len(restarts) // 2]} ms")
            missing = check(service.host, tally)
        finally:
            service.stop()
    print(f"\nmissing or wrong anywhere: {missing}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
