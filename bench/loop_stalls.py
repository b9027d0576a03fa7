"""Where the hostile 1 MB job holds the event loop, in process (CPython): the Worker app and
the user's writer (tests/unit's twin) on one asyncio loop, as the local host runs them on one
JS event loop; a thread samples the loop's stack whenever it has not turned for a while.

Prints every stretch longer than `--over` ms with its length and the frames of this package
it was sampled in most (the stage that held the loop). CPython is about 2-3x faster than
Pyodide, so a stretch here is a fraction of the host's; where it is, is the same.

Run: `.venv/bin/python -m bench.loop_stalls [--mb 1.0] [--over 20]`.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import sys
import threading
import time
from dataclasses import dataclass, field
from types import FrameType

import httpx

from bench.hostile_text import SENTENCE_CHARS, hostile_messages
from entity_memory.http.app import create_app
from entity_memory.service.bindings import Bindings
from entity_memory.storage.kv import CountingKV, InMemoryKV

#: How often the loop's heartbeat ticks, and the sampler looks at it (seconds).
TICK_S = 0.002
SAMPLE_S = 0.002


@dataclass
class Stall:
    start: float
    end: float = 0.0
    #: CPU time the loop's thread spent from the stall's detection to its end (s): what it
    #: ran, where the wall time also holds the time a loaded machine gave it no core.
    cpu_from: float = 0.0
    cpu: float = 0.0
    samples: collections.Counter[str] = field(default_factory=collections.Counter)


def _where(frame: FrameType | None) -> str:
    """The innermost frames of this package (and the stdlib call under them), outermost last."""
    ours: list[str] = []
    leaf = ""
    while frame is not None:
        name = frame.f_code.co_filename
        here = f"{name.rsplit('/', 1)[-1]}:{frame.f_code.co_name}:{frame.f_lineno}"
        if "entity_memory" in name:
            ours.append(here)
        elif not ours and not leaf:
            leaf = here
        frame = frame.f_back
    return " < ".join(([leaf] if leaf else []) + ours[:4])


class Sampler:
    """A thread that samples the loop thread's stack while the loop's heartbeat is late."""

    def __init__(self, over_s: float) -> None:
        self.over_s = over_s
        self.beat = time.perf_counter()
        self.stalls: list[Stall] = []
        self.loop_thread = threading.get_ident()
        self.cpu_clock = time.pthread_getcpuclockid(self.loop_thread)
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    async def heartbeat(self) -> None:
        while not self.done.is_set():
            self.beat = time.perf_counter()
            await asyncio.sleep(TICK_S)

    def _run(self) -> None:
        current: Stall | None = None
        while not self.done.is_set():
            time.sleep(SAMPLE_S)
            now, beat = time.perf_counter(), self.beat
            if now - beat > TICK_S + 0.005:
                cpu = time.clock_gettime(self.cpu_clock)
                if current is None or current.start != beat:
                    if current is not None:
                        self._close(current)
                    current = Stall(start=beat, cpu_from=cpu)
                frame = sys._current_frames().get(self.loop_thread)
                current.samples[_where(frame)] += 1
                current.end, current.cpu = now, cpu - current.cpu_from
            elif current is not None:
                self._close(current)
                current = None

    def _close(self, stall: Stall) -> None:
        if stall.end - stall.start >= self.over_s:
            self.stalls.append(stall)


async def run(mb: float, over_ms: float) -> None:
    # Imported here: tests/ is not a package the bench needs otherwise.
    from tests.unit.conftest import Time
    from tests.unit.writer_twin import WriterTwin

    class WallClock:
        def __call__(self) -> int:
            return int(time.time() * 1000)

    clock = WallClock()
    kv = CountingKV(InMemoryKV(clock=clock))  # type: ignore[arg-type]
    base = Bindings(kv=kv, db=None, clock=clock)
    twin = WriterTwin(lambda env: base, clock, Time(clock).sleep)  # type: ignore[arg-type]
    twin.sleep = asyncio.sleep  # real seconds: the index window as the host has it
    worker = Bindings(kv=kv, db=None, clock=clock, writers=twin.stub)
    app = create_app(lambda env: worker)
    sentences = int(mb * 1_000_000) // (SENTENCE_CHARS + 1)
    body = {"messages": [m.model_dump() for m in hostile_messages(sentences)], "extractor": "rules"}
    sampler = Sampler(over_ms / 1000)
    beat = asyncio.ensure_future(sampler.heartbeat())
    sampler.thread.start()
    transport = httpx.ASGITransport(app=app)
    t0 = time.perf_counter()
    async with httpx.AsyncClient(transport=transport, base_url="http://t", timeout=600) as c:
        r = await c.post("/v1/users/hostile/sessions/flood/extract", json=body)
        print(f"POST {r.status_code} in {time.perf_counter() - t0:.2f} s")
        while twin.alarms:
            await asyncio.gather(*list(twin.alarms))
        job = (await c.get(r.json()["statusUrl"])).json()
        print(f"job {job['state']} after {time.perf_counter() - t0:.1f} s")
    sampler.done.set()
    await beat
    sampler.thread.join()
    stalls = sorted(sampler.stalls, key=lambda s: -s.cpu)
    print(f"{len(stalls)} stretches over {over_ms:.0f} ms; most CPU first (wall ms, cpu ms):")
    for s in stalls[:25]:
        where, n = s.samples.most_common(1)[0]
        wall, cpu = 1000 * (s.end - s.start), 1000 * s.cpu
        print(f"  {wall:6.0f} {cpu:6.0f}  ({n}/{s.samples.total()}) {where}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=1.0, help="size of the hostile session")
    parser.add_argument("--over", type=float, default=20.0, help="stretches longer than (ms)")
    args = parser.parse_args()
    asyncio.run(run(args.mb, args.over))


if __name__ == "__main__":
    main()
