"""The host's life cycle: `kill -9` mid-load loses no acknowledged write, and the dead host
leaves no child running on its state files."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from pathlib import Path

import httpx
import pytest

from .hostproc import start_host

pytestmark = pytest.mark.e2e

#: Writes in flight at once: after the kill (at 6 acknowledged) at most this many more can be.
IN_FLIGHT = 4


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                text = Path(f"/proc/{name}/stat").read_text()
            except OSError:
                continue
            children.setdefault(int(text[text.rindex(")") + 2 :].split()[1]), []).append(int(name))
    found, queue = [], [root]
    while queue:
        for child in children.get(queue.pop(), []):
            found.append(child)
            queue.append(child)
    return found


def _running(pid: int) -> bool:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return text[text.rindex(")") + 2] != "Z"


def test_kill_9_mid_load_then_retry_leaves_every_acknowledged_write_indexed(
    tmp_path: Path,
) -> None:
    user = "crash-user"
    batches = [
        {"session_id": f"s{b}", "entities": [{"type": "campaign", "name": f"K {b}"}]}
        for b in range(24)
    ]
    acked: set[str] = set()

    async def send_all(base_url: str, kill_after: int | None, pid: int | None) -> None:
        # A few requests in flight at a time: concurrent writes, yet the kill always comes
        # while most batches are still unsent, however fast this machine answers (all 24 sent
        # at once could all be answered before the kill, and the host would not die mid-load).
        in_flight = asyncio.Semaphore(IN_FLIGHT)
        async with httpx.AsyncClient(base_url=base_url, timeout=60) as ac:

            async def one(body: dict) -> None:
                try:
                    async with in_flight:
                        r = await ac.put(f"/v1/users/{user}/entities", json=body)
                except httpx.HTTPError:
                    return
                if r.status_code == 200:
                    acked.update(x["key"] for x in r.json()["results"])
                    if kill_after is not None and len(acked) >= kill_after and pid:
                        os.kill(pid, signal.SIGKILL)

            await asyncio.gather(*(one(b) for b in batches))

    state = tmp_path / "v3"
    with start_host(state) as first:
        children = [p for p in _descendants(first.process.pid) if _running(p)]
        names = {Path(f"/proc/{p}/comm").read_text().strip() for p in children}
        assert "workerd" in names, names
        asyncio.run(send_all(first.base_url, kill_after=6, pid=first.process.pid))
        # kill -9 runs no exit handler; the host's watcher still stops its children.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(_running(p) for p in children):
            time.sleep(0.2)
        left = [p for p in children if _running(p)]
        assert left == [], [Path(f"/proc/{p}/cmdline").read_text() for p in left]
    assert 6 <= len(acked) < len(batches)  # the host died mid-load
    before_retry = set(acked)
    with start_host(state) as second:
        asyncio.run(send_all(second.base_url, kill_after=None, pid=None))
        index = json.loads(second.answered_index(user))
        indexed = {f"entity:{user}:{e['type']}:{e['id']}" for e in index["entries"]}
        live = {k["name"] for k in second.kv_list(f"entity:{user}:")}
    assert before_retry <= live and before_retry <= indexed
    assert indexed == live and len(live) == len(batches)
