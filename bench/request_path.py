"""Per-request figures: how many of the app's modules one request passes through, and how
many times it builds a store, checks a KV put, serialises an entity or validates a model.

Runs the Worker app on CPython in front of the in-process twin of the users' writers (the
production path: route -> RemoteWriter -> the object's RPC -> WriterHost -> service), for a
user already holding `--entities` entities: one PUT of 20 entities (10 updates, 10 new), one
extraction (rules, waited for), one context request. Counts come from `sys.setprofile`, so
they are exact, and independent of the machine's speed.

Run: `.venv/bin/python -m bench.request_path [--entities 200]`
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import types
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
SRC = str(ROOT / "src")
sys.path.insert(0, str(ROOT))  # tests.unit.writer_twin

from tests.unit.writer_twin import WriterTwin  # noqa: E402

from bench.bench_store import entity_doc as doc  # noqa: E402
from entity_memory.http.app import create_app  # noqa: E402
from entity_memory.service.bindings import Bindings  # noqa: E402
from entity_memory.storage.d1 import SQLiteD1  # noqa: E402
from entity_memory.storage.index_snapshots import IndexSnapshots  # noqa: E402
from entity_memory.storage.kv import InMemoryKV  # noqa: E402

#: The calls counted by name (any module of the app, and pydantic's model validation).
COUNTED = (
    "build_store",
    "check_put",
    "to_json_dict",
    "model_validate",
    "model_validate_json",
    "validate_id",
    "validate_type",
)
T0 = 1_780_000_000_000
CONVERSATION = [
    {"role": "user", "content": "Campaign Harbor Lights is spending too fast this week."},
    {"role": "assistant", "content": "I can move Harbor Lights to a lower daily budget."},
    {"role": "user", "content": "Yes, cap it at 40 dollars a day. I prefer weekly summaries."},
]


class Profile:
    """What the profiled requests touch: app modules entered and named calls."""

    def __init__(self) -> None:
        self.files: set[str] = set()
        self.calls: Counter[str] = Counter()

    def __call__(self, frame: types.FrameType, event: str, arg: object) -> None:
        if event != "call":
            return
        code = frame.f_code
        name = code.co_name
        if code.co_filename.startswith(SRC):
            self.files.add(code.co_filename[len(SRC) + 1 :])
            if name in COUNTED:
                self.calls[name] += 1
        elif name in ("model_validate", "model_validate_json") and "pydantic" in code.co_filename:
            self.calls[name] += 1


async def measured(run: Callable[[], Awaitable[None]]) -> Profile:
    profile = Profile()
    sys.setprofile(profile)
    try:
        await run()
    finally:
        sys.setprofile(None)
    return profile


async def main(entities: int) -> None:
    now = [T0]

    def clock() -> int:
        return now[0]

    async def sleep(seconds: float) -> None:
        for _ in range(50):
            await asyncio.sleep(0)
        now[0] += int(seconds * 1000)

    kv = InMemoryKV(clock=clock)
    db = SQLiteD1(migrations=ROOT / "migrations")
    base = Bindings(kv=kv, db=db, clock=clock)
    twin = WriterTwin(lambda env: base, clock, sleep)
    worker = Bindings(kv=kv, db=db, clock=clock, writers=twin.stub, snapshots=IndexSnapshots())
    app = create_app(lambda env: replace(worker))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://bench") as c:
        for start in range(0, entities, 100):
            body = {
                "session_id": f"fill{start}",
                "entities": [doc(i) for i in range(start, min(entities, start + 100))],
            }
            (await c.put("/v1/users/u1/entities", json=body)).raise_for_status()
        batch = [doc(i) for i in range(entities - 10, entities + 10)]

        async def put() -> None:
            r = await c.put("/v1/users/u1/entities", json={"session_id": "p1", "entities": batch})
            r.raise_for_status()

        async def extract() -> None:
            r = await c.post(
                "/v1/users/u1/sessions/x1/extract?wait=true",
                json={"messages": CONVERSATION, "extractor": "rules"},
            )
            assert r.status_code == 200, r.text
            # The job runs in the writer's alarm (a task of the twin): wait for it to settle.
            while twin.alarms:
                await asyncio.sleep(0)

        async def context() -> None:
            r = await c.post("/v1/users/u1/context", json={"task": "Harbor Lights budget"})
            r.raise_for_status()

        for label, run in (("PUT of 20", put), ("extract", extract), ("context", context)):
            p = await measured(run)
            calls = ", ".join(f"{n} {p.calls[n]}" for n in COUNTED)
            print(f"{label}: {len(p.files)} modules; {calls}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entities", type=int, default=200)
    asyncio.run(main(parser.parse_args().entities))
