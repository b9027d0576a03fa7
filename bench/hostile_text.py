"""Hostile text against the rules (issue 39, finding 5): a 1 MB session of 990-character
sentences of KPI words, run as a job on the local host while other users call `/healthz`
and PUT entities. Prints how long those waited (median, p90, max), with no job and during it,
and how long the job took; then, in process, the longest time detection held the event loop
between two turns for others.

A user's PUTs are timed two ways: spaced by more than a second (what the job costs them) and
back to back (each also waits for the user's next index write to KV, about a second, with or
without a job: docs/consistency.md, "Back-to-back writes").

Timing depends on the machine's load; this prints, it asserts nothing (the structural bounds
are tests/unit/test_rules_hostile_text.py's).

Run: `.venv/bin/python -m bench.hostile_text [--url URL] [--var EMBEDDING_MODEL=off]
[--mb 1.0]` (without --url it starts the local host on a fresh state directory).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path

import httpx
from tests.e2e.hostproc import start_host

from entity_memory.domain.pacing import Pacer
from entity_memory.extraction.base import Message
from entity_memory.extraction.rules.extractor import detect_all_cooperatively
from entity_memory.extraction.rules.mentions import MentionFinder
from entity_memory.service.user_writer import MIN_INDEX_WRITE_INTERVAL_MS

#: Words of the hostile sentences: KPIs, amounts and the links between them.
KPI_WORDS = "CPA ROAS CTR CPC CPM CPL AOV conversion rate cost per signup target $42 3.1x 12% is at"
SENTENCE_CHARS = 990
#: Characters a message may hold (the API's limit is 100,000).
MESSAGE_CHARS = 99_000


def hostile_sentence(length: int = SENTENCE_CHARS, seed: int = 0) -> str:
    """`length` characters of KPI words, amounts and links, ending with a full stop."""
    words = KPI_WORDS.split()
    text = ""
    for i in itertools.count():
        word = words[(i * 7 + seed) % len(words)]
        if len(text) + len(word) + 2 > length:
            break
        text = f"{text} {word}" if text else word
    return text + "."


def hostile_messages(sentences: int) -> list[Message]:
    """`sentences` hostile sentences, as few messages as the message limit allows."""
    per_message = MESSAGE_CHARS // (SENTENCE_CHARS + 1)
    out = []
    for start in range(0, sentences, per_message):
        seeds = range(start, min(sentences, start + per_message))
        out.append(Message(role="user", content=" ".join(hostile_sentence(seed=i) for i in seeds)))
    return out


def _figures(label: str, seconds: list[float]) -> str:
    ms = sorted(s * 1000 for s in seconds)
    if not ms:
        return f"{label}: none"
    p90 = ms[int(0.9 * (len(ms) - 1))]
    return (
        f"{label}: {len(ms)} requests, median {statistics.median(ms):.0f} ms,"
        f" p90 {p90:.0f} ms, max {ms[-1]:.0f} ms"
    )


#: Seconds other users are timed before the job, as the loaded machine's baseline.
BASELINE_S = 10.0
#: A writer publishes a user's index to KV at most once a second, and acknowledges a write
#: once KV holds it: a user's PUT sent as soon as their previous one was answered waits for
#: the next publication, about a second, whatever the host is doing (docs/consistency.md,
#: "Back-to-back writes"). So one user's PUTs are spaced by more than that and measure what
#: the hostile job costs them; another user's back-to-back PUTs show that window apart.
PUT_SPACING_S = MIN_INDEX_WRITE_INTERVAL_MS / 1000 + 0.1
#: Pause between two /healthz calls.
HEALTHZ_PAUSE_S = 0.02


class OtherUsers:
    """Other users' requests, timed in threads until `stop`: /healthz back to back, one
    user's PUTs spaced past the index window, another user's PUTs back to back."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.healthz: list[float] = []
        self.spaced: list[float] = []
        self.back_to_back: list[float] = []
        self.stop = threading.Event()
        self.threads = [
            threading.Thread(target=self._healthz),
            threading.Thread(target=self._puts, args=("hostile-spaced", self.spaced, True)),
            threading.Thread(target=self._puts, args=("hostile-b2b", self.back_to_back, False)),
        ]

    def __enter__(self) -> OtherUsers:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join()

    def _healthz(self) -> None:
        with httpx.Client(base_url=self.base_url, timeout=120) as c:
            while not self.stop.is_set():
                t0 = time.perf_counter()
                assert c.get("/healthz").status_code == 200
                self.healthz.append(time.perf_counter() - t0)
                time.sleep(HEALTHZ_PAUSE_S)

    def _puts(self, user: str, times: list[float], spaced: bool) -> None:
        with httpx.Client(base_url=self.base_url, timeout=120) as c:
            for i in itertools.count():
                if self.stop.is_set():
                    return
                # A new content each time: an unchanged entity is not written at all.
                doc = {"type": "campaign", "name": f"Harbor Rooms {i % 5}", "content": f"Pass {i}."}
                body = {"session_id": f"s{i}", "entities": [doc]}
                t0 = time.perf_counter()
                r = c.put(f"/v1/users/{user}/entities", json=body)
                times.append(time.perf_counter() - t0)
                assert r.status_code == 200, r.text
                if spaced:
                    self.stop.wait(PUT_SPACING_S)

    def report(self, when: str) -> None:
        print(_figures(f"{when}: another user's /healthz", self.healthz))
        spacing = f"spaced by {PUT_SPACING_S:.1f} s"
        print(_figures(f"{when}: another user's PUT, {spacing}", self.spaced))
        window = "back to back (each waits for the user's next index write, ~1 s)"
        print(_figures(f"{when}: a third user's PUT, {window}", self.back_to_back))


def _load() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def on_host(base_url: str, sentences: int) -> None:
    """Other users' /healthz and PUTs, timed with no job (the loaded machine's baseline),
    then while one user's hostile job runs."""
    messages = [m.model_dump() for m in hostile_messages(sentences)]
    print(_load())
    with OtherUsers(base_url) as idle:
        time.sleep(BASELINE_S)
    idle.report("no job")
    with httpx.Client(base_url=base_url, timeout=120) as c:
        body = {"messages": messages, "extractor": "rules"}
        with OtherUsers(base_url) as busy:
            t0 = time.perf_counter()
            started = c.post("/v1/users/hostile-user/sessions/flood/extract", json=body)
            assert started.status_code in (200, 202), started.text[:500]
            print(f"job accepted in {time.perf_counter() - t0:.2f} s ({started.status_code})")
            state = started.json().get("job", {}).get("state", "done")
            while state in ("queued", "running"):
                time.sleep(0.5)
                state = c.get(started.json()["statusUrl"]).json()["state"]
        print(f"job {state} after {time.perf_counter() - t0:.1f} s")
    busy.report("during the job")
    print(_load())


class _Timed(Pacer):
    """A pacer that keeps how long each stretch between two turns lasted."""

    def __init__(self) -> None:
        super().__init__()
        self.stretches: list[float] = []

    def restart(self) -> None:
        self.stretches.append(self.clock() - self.since)
        super().restart()


def in_process(sentences: int) -> None:
    pacer = _Timed()
    t0 = time.perf_counter()
    asyncio.run(detect_all_cooperatively(hostile_messages(sentences), MentionFinder([]), pacer))
    longest = max(pacer.stretches, default=0.0) * 1000
    print(
        f"in process (CPython): detection {time.perf_counter() - t0:.1f} s,"
        f" {len(pacer.stretches)} turns for others, longest stretch {longest:.0f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a running local host; default: start one")
    parser.add_argument("--var", action="append", default=[], help="NAME=VALUE for the host")
    parser.add_argument("--mb", type=float, default=1.0, help="size of the hostile session")
    args = parser.parse_args()
    sentences = int(args.mb * 1_000_000) // (SENTENCE_CHARS + 1)
    print(f"{sentences} sentences of {SENTENCE_CHARS} characters")
    if args.url:
        on_host(args.url, sentences)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            host_args = [arg for pair in args.var for arg in ("--var", pair)]
            with start_host(Path(tmp) / "v3", host_args) as host:
                on_host(host.base_url, sentences)
    in_process(sentences)


if __name__ == "__main__":
    main()
