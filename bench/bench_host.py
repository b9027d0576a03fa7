"""Benchmark: the local host's request latency and cold start, the figures issue 14 targets.

- a 20-entity PUT (10 updates, 10 new) and a context request for a user holding N entities
  (default 1k and 2k). With embeddings on (the default: the local model), a PUT is answered
  before its texts are embedded; the user's writer embeds them next, in its alarm. So the
  bench waits for the fill's vectors before timing anything, times each PUT once the previous
  one's vectors are made (and prints how long after the answer KV's index holds them: the
  writer publishes them with the user's next write, or within `VECTORS_FLUSH_WITHIN_MS`),
  then PUTs a second apart, whose texts are still being embedded when the next one comes,
  and a context request sent right after a PUT's answer (its query shares the model with
  that PUT's texts);
- cold start: `node local/host.mjs` spawned to its first 200 on /healthz, and what
  `scripts/serve`'s migration step adds when nothing is pending.

Every figure is the median of `--repeats` runs with min-max spread. Timing depends on the
machine's load; this prints, it asserts nothing.

Run: `.venv/bin/python -m bench.bench_host [--sizes 1000,2000] [--cold 5] [--url URL]
[--var EMBEDDING_MODEL=off]` (without --url it starts the local host itself on a fresh state
directory; with --url it cannot read KV, so it neither waits for vectors nor times them).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from tests.e2e.hostproc import CLI_ENV, REPO, Host, _free_port, _stop, start_host

from bench.bench_store import TASK, entity_doc
from bench.host_put import put_entities
from entity_memory.service.user_writer import MIN_INDEX_WRITE_INTERVAL_MS
from entity_memory.service.vector_backlog import VECTORS_FLUSH_WITHIN_MS

FILL_BATCH = 100


def spread(samples: list[float]) -> str:
    return (
        f"median {statistics.median(samples):8.1f} ms "
        f"(min {min(samples):.1f}, max {max(samples):.1f}, n={len(samples)})"
    )


def timed(fn: Callable[[], Any], repeats: int, pause_s: float = 0.0) -> list[float]:
    samples = []
    for _ in range(repeats):
        time.sleep(pause_s)
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1000)
    return samples


def vectors_made(host: Host | None, user: str, embeddings: bool) -> None:
    """Until every entry of the user's index in KV has a vector (no-op without KV access)."""
    if host is not None and embeddings:
        host.vectors_made(user, timeout_s=900)


def requests(base_url: str, n: int, repeats: int, host: Host | None, embeddings: bool) -> None:
    user = f"host-bench-{n}"
    with httpx.Client(base_url=base_url, timeout=600) as client:
        for start in range(0, n, FILL_BATCH):
            docs = [entity_doc(i) for i in range(start, min(n, start + FILL_BATCH))]
            put_entities(client, user, "fill", docs)
        counter = iter(range(10**9))

        def put20() -> None:
            k = next(counter)
            docs = [
                {**entity_doc(j), "content": f"{entity_doc(j)['content']} v{k}"} for j in range(10)
            ]
            docs += [entity_doc(n + 1000 * (k + 1) + j) for j in range(10)]
            client.put(
                f"/v1/users/{user}/entities", json={"session_id": f"s{k}", "entities": docs}
            ).raise_for_status()

        def context() -> None:
            client.post(
                f"/v1/users/{user}/context", json={"task": TASK, "limit": 20}
            ).raise_for_status()

        def listing() -> None:
            client.get(f"/v1/users/{user}/entities").raise_for_status()

        t = time.perf_counter()
        vectors_made(host, user, embeddings)
        if host is not None and embeddings:
            waited = time.perf_counter() - t
            print(f"{n:>6} entities | fill's vectors made {waited:.1f} s after its last PUT")
        put20()  # warm: first-use imports are a cold-start cost, not a per-request one
        context()
        vectors_made(host, user, embeddings)
        # One user's writes are acknowledged once KV's index holds them, and the index key is
        # written at most once a second: back to back, each PUT would wait out that second.
        # Spaced by it, a PUT measures its own work.
        pause = MIN_INDEX_WRITE_INTERVAL_MS / 1000
        if host is None or not embeddings:
            print(f"{n:>6} entities | PUT 20     | {spread(timed(put20, repeats, pause))}")
            print(f"{n:>6} entities | PUT 20 back to back | {spread(timed(put20, repeats))}")
            print(f"{n:>6} entities | context 20 | {spread(timed(context, repeats))}", flush=True)
            print(f"{n:>6} entities | list | {spread(timed(listing, repeats))}", flush=True)
            for name, read in (("context 20", context), ("list", listing)):
                read_after_write(n, repeats, name, put20, read)
            return
        with_vectors(n, repeats, pause, put20, context, lambda: vectors_made(host, user, True))


def read_after_write(
    n: int, repeats: int, name: str, put20: Callable[[], None], read: Callable[[], None]
) -> None:
    """A read sent as soon as a PUT is answered, PUT and read back to back: with
    `WRITE_ACK=committed` the PUT's index is still being published, and the read asks the
    writer for it; with `indexed` the PUT waited for it."""
    reads, pairs = [], []
    for _ in range(repeats):
        t = time.perf_counter()
        put20()
        r = time.perf_counter()
        read()
        reads.append((time.perf_counter() - r) * 1000)
        pairs.append((time.perf_counter() - t) * 1000)
    print(f"{n:>6} entities | {name} right after a PUT | {spread(reads)}")
    print(f"{n:>6} entities | PUT 20 + {name}, back to back | {spread(pairs)}", flush=True)


def with_vectors(
    n: int,
    repeats: int,
    pause: float,
    put20: Callable[[], None],
    context: Callable[[], None],
    vectors_made: Callable[[], None],
) -> None:
    """The figures with embeddings on, where a PUT leaves its texts to the writer's alarm."""
    puts, made = [], []
    for _ in range(repeats):
        time.sleep(pause)
        t = time.perf_counter()
        put20()
        puts.append((time.perf_counter() - t) * 1000)
        vectors_made()  # so the next PUT shares the CPU with nothing of this one
        made.append((time.perf_counter() - t) * 1000)
    print(f"{n:>6} entities | PUT 20     | {spread(puts)}")
    print(
        f"{n:>6} entities | PUT 20 -> its vectors in KV's index (published with the next write,"
        f" or within {VECTORS_FLUSH_WITHIN_MS / 1000:.0f} s) | {spread(made)}"
    )
    every_second = spread(timed(put20, repeats, pause))
    print(
        f"{n:>6} entities | PUT 20 a second after the last (its texts still embedding) |"
        f" {every_second}"
    )
    # Back to back, each PUT waits for the next of KV's once-a-second index writes.
    print(f"{n:>6} entities | PUT 20 back to back | {spread(timed(put20, repeats))}")
    vectors_made()
    print(f"{n:>6} entities | context 20 | {spread(timed(context, repeats))}", flush=True)
    # The query's embedding shares the model with the PUT's texts, embedded meanwhile.
    after_put = []
    for _ in range(repeats):
        time.sleep(pause)
        put20()
        after_put += timed(context, 1)
        vectors_made()
    print(f"{n:>6} entities | context 20 right after a PUT | {spread(after_put)}", flush=True)


def cold_start(state: Path, runs: int, host_args: list[str]) -> None:
    """Spawn the host on an existing state directory and time until /healthz answers 200."""
    samples, reported = [], []
    # One client for all polls: httpx.get builds a client (and its TLS context) per call, which
    # on a 2-CPU machine took enough CPU from the starting host to add ~0.3 s to its start-up.
    poller = httpx.Client(timeout=5)
    for _ in range(runs):
        port = _free_port()
        t = time.perf_counter()
        process = subprocess.Popen(
            ["node", "local/host.mjs", "--port", str(port), "--persist", str(state), *host_args],
            cwd=REPO,
            env=CLI_ENV,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        try:
            while True:
                try:
                    if poller.get(f"http://127.0.0.1:{port}/healthz").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if process.poll() is not None:
                    raise RuntimeError("the host exited during start-up")
                time.sleep(0.02)
            samples.append((time.perf_counter() - t) * 1000)
        finally:
            _stop(process)
        assert process.stdout is not None
        for line in process.stdout:
            if "ready on" in line:
                reported.append(float(line.rsplit(" in ", 1)[1].split()[0]))
    poller.close()
    print(f"cold start to first 200 (spawn included) | {spread(samples)}")
    if reported:
        print(f"cold start as the host reports it       | {spread(reported)}")


def migrate_step(state: Path, runs: int) -> None:
    """What scripts/serve's migration step costs when every migration is already applied."""
    env = {**CLI_ENV, "ENTITY_MEMORY_PERSIST": str(state)}
    cmd = ["bash", "scripts/serve", "--migrate-only", "--persist", str(state)]
    samples = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, cwd=REPO, env=env, check=True, capture_output=True)
        samples.append((time.perf_counter() - t) * 1000)
    print(f"scripts/serve --migrate-only (setup + migrations, none pending) | {spread(samples)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,2000")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--cold", type=int, default=5, help="cold-start runs (0: skip)")
    parser.add_argument("--url", help="a running local host; default: start one")
    # e.g. `--var EMBEDDING_MODEL=off`: no vectors at all (the writer's alarm then embeds
    # nothing after a write), which isolates the host's own costs.
    parser.add_argument("--var", action="append", default=[], help="NAME=VALUE for the host")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"machine: {os.cpu_count()} CPUs; figures vary with load")
    embeddings = "EMBEDDING_MODEL=off" not in args.var
    if args.url:
        for n in sizes:
            requests(args.url, n, args.repeats, None, embeddings)
        return
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "v3"
        host_args = [arg for pair in args.var for arg in ("--var", pair)]
        with start_host(state, host_args) as host:
            print(f"host started in {host.startup_ms} ms (its own figure)", flush=True)
            for n in sizes:
                requests(host.base_url, n, args.repeats, host, embeddings)
        if args.cold:
            cold_start(state, args.cold, host_args)
            if "--migrate-only" in (REPO / "scripts/serve").read_text():
                migrate_step(state, args.cold)


if __name__ == "__main__":
    main()
