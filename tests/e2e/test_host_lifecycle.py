"""The host's life cycle: it never outlives itself through its children."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from .hostproc import start_host

pytestmark = pytest.mark.e2e


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


def test_killing_the_host_stops_its_children(tmp_path: Path) -> None:
    """kill -9 runs no exit handler; the host's watcher still stops workerd and the model."""
    with start_host(tmp_path / "v3") as doomed:
        children = [p for p in _descendants(doomed.process.pid) if _running(p)]
        names = {Path(f"/proc/{p}/comm").read_text().strip() for p in children}
        assert "workerd" in names, names
        os.kill(doomed.process.pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(_running(p) for p in children):
            time.sleep(0.2)
        assert [p for p in children if _running(p)] == []
