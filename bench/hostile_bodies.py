"""Hostile bodies against the local host (issue 39, findings 1, 2 and 7): what each costs the
host and everyone else on it.

    .venv/bin/python -m bench.hostile_bodies          # starts a host on a temp dir

Reports, each with the host's `/healthz` latency measured while the request is in flight:

- the escaped-quote bodies (`"` then `\\"` repeated, then 65 `[`), 32 KB and 1 MiB: a
  backtracking string pattern took 11 s on 32 KB and would take hours on 1 MiB;
- depth 6,000 under each content-type spelling (it killed the host under `application/JSON`);
- wide and deep bodies of 1 MiB (the depth check's worst cases);
- a 256 MiB chunked upload with no token: bytes sent before the answer and the host's
  resident memory (baseline and peak, sampled every 20 ms; it grew by 910 MB);
- a body shorter than its declared length: the answer and when it came.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from tests.e2e.hostile import CONTENT_TYPES, chunked_upload, quadratic_body, short_body
from tests.e2e.hostproc import start_host

from entity_memory.domain.safe_json import nesting_exceeds

MIB = 1024 * 1024


def rss_mb(pid: int) -> float:
    """Resident memory of a process, MB (Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def while_probing(base_url: str, work: Callable[[], Any]) -> tuple[Any, float, float]:
    """(work's result, its seconds, the slowest `/healthz` answered meanwhile, s)."""
    done = threading.Event()
    waits: list[float] = []

    def probe() -> None:
        with httpx.Client(base_url=base_url, timeout=120) as c:
            while not done.is_set():
                start = time.perf_counter()
                c.get("/healthz")
                waits.append(time.perf_counter() - start)
                time.sleep(0.02)

    prober = threading.Thread(target=probe)
    prober.start()
    start = time.perf_counter()
    try:
        result = work()
    finally:
        elapsed = time.perf_counter() - start
        done.set()
        prober.join()
    return result, elapsed, max(waits, default=0.0)


def post(base_url: str, body: bytes, content_type: str | None = "application/json") -> Any:
    headers = {"content-type": content_type} if content_type else {}
    with httpx.Client(base_url=base_url, timeout=600) as c:
        r = c.post("/v1/users/bench-hostile/context", content=body[:MIB], headers=headers)
        return f"{r.status_code} {r.json()['error']['code'] if r.status_code >= 400 else ''}"


def report(label: str, base_url: str, work: Callable[[], Any], runs: int = 3) -> None:
    times, healthz, answer = [], [], None
    for _ in range(runs):
        answer, elapsed, slowest = while_probing(base_url, work)
        times.append(elapsed)
        healthz.append(slowest)
    print(
        f"{label:44} {answer!s:24} median {statistics.median(times) * 1000:7.1f} ms"
        f"   slowest /healthz meanwhile {max(healthz) * 1000:6.1f} ms",
        flush=True,
    )


def memory_under_upload(base_url: str, pid: int) -> None:
    baseline = rss_mb(pid)
    peak = [baseline]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], rss_mb(pid))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        (status, sent), elapsed, slowest = while_probing(
            base_url, lambda: chunked_upload(base_url, "/v1/users/bench-big/context", 256 * MIB)
        )
    finally:
        done.set()
        sampler.join()
    print(
        f"256 MiB chunked upload: {status} after {sent / MIB:.1f} MiB sent in {elapsed:.2f} s;"
        f" host RSS {baseline:.0f} MB before, peak {peak[0]:.0f} MB"
        f" (+{peak[0] - baseline:.0f} MB); slowest /healthz {slowest * 1000:.1f} ms",
        flush=True,
    )


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="hostile-") as tmp, start_host(Path(tmp) / "v3") as h:
        url = h.base_url
        print(f"host ready on {url} in {h.startup_ms} ms", flush=True)
        print("in-process depth check (this CPython):", flush=True)
        for size in (32 * 1024, MIB):
            start = time.perf_counter()
            nesting_exceeds(quadratic_body(size))
            ms = (time.perf_counter() - start) * 1000
            print(f"  escaped quotes, {size // 1024} KB: {ms:.1f} ms", flush=True)
        # What any request of that size costs on this host, for comparison.
        report("baseline: 2 bytes of invalid JSON", url, lambda: post(url, b'"x'))
        report("baseline: 1 MiB of spaces, invalid", url, lambda: post(url, b" " * MIB + b'"x'))
        for size in (32 * 1024, MIB):
            body = quadratic_body(size)
            report(f"escaped quotes, {size // 1024} KB", url, lambda b=body: post(url, b))
        deep = b"[" * 6000 + b"]" * 6000
        for content_type in CONTENT_TYPES:
            report(f"depth 6,000 as {content_type}", url, lambda t=content_type: post(url, deep, t))
        for label, body in (
            ("1 MiB of [] pairs", b"[]" * (MIB // 2)),
            ("1 MiB, half [ then half ]", b"[" * (MIB // 2) + b"]" * (MIB // 2)),
            ("1 MiB, one [ never closed, then pairs", b"[" + b"[]" * (MIB // 2 - 1)),
        ):
            report(label, url, lambda b=body: post(url, b))
        memory_under_upload(url, h.process.pid)
        for declared in (999_999_999, 100):
            start = time.perf_counter()
            status = short_body(url, "/v1/users/bench-short/context", declared, b"{}")
            print(
                f"Content-Length {declared} with 2 bytes: {status} after"
                f" {time.perf_counter() - start:.2f} s",
                flush=True,
            )
        assert httpx.get(f"{url}/healthz", timeout=60).status_code == 200
        print("host alive at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
