"""Hostile text against the rules (issue 39, finding 5): a 1 MB session of 990-character
sentences of KPI words, run as a job on the local host while another user calls `/healthz`
and PUTs entities. Prints how long those waited (median, p90, max) and how long the job took;
then, in process, the longest time detection held the event loop between two turns for others.

Timing depends on the machine's load; this prints, it asserts nothing (the structural bounds
are tests/unit/test_rules_hostile_text.py's).

Run: `.venv/bin/python -m bench.hostile_text [--url URL] [--var EMBEDDING_MODEL=off]
[--mb 1.0]` (without --url it starts the local host on a fresh state directory).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
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


#: Rounds of another user's requests timed before the job, as the machine's baseline.
IDLE_ROUNDS = 10


def on_host(base_url: str, sentences: int) -> None:
    """Another user's /healthz and PUT, timed with no job (the loaded machine's baseline),
    then while one user's hostile job runs."""
    messages = [m.model_dump() for m in hostile_messages(sentences)]
    healthz: list[float] = []
    puts: list[float] = []
    done = threading.Event()

    def other_user(rounds: int | None = None) -> None:
        with httpx.Client(base_url=base_url, timeout=120) as o:
            for i in itertools.count():
                if done.is_set() or (rounds is not None and i >= rounds):
                    return
                t0 = time.perf_counter()
                assert o.get("/healthz").status_code == 200
                healthz.append(time.perf_counter() - t0)
                doc = {"type": "campaign", "name": f"Harbor Rooms {i % 5}"}
                t0 = time.perf_counter()
                body = {"session_id": f"s{i}", "entities": [doc]}
                r = o.put("/v1/users/hostile-other/entities", json=body)
                puts.append(time.perf_counter() - t0)
                assert r.status_code == 200, r.text

    other_user(IDLE_ROUNDS)
    print(_figures("no job: another user's /healthz", healthz))
    print(_figures("no job: another user's PUT", puts))
    healthz.clear()
    puts.clear()
    with httpx.Client(base_url=base_url, timeout=120) as c:
        body = {"messages": messages, "extractor": "rules"}
        t0 = time.perf_counter()
        started = c.post("/v1/users/hostile-user/sessions/flood/extract", json=body)
        assert started.status_code in (200, 202), started.text[:500]
        print(f"job accepted in {time.perf_counter() - t0:.2f} s ({started.status_code})")
        reader = threading.Thread(target=other_user)
        reader.start()
        try:
            state = started.json().get("job", {}).get("state", "done")
            while state in ("queued", "running"):
                time.sleep(0.5)
                state = c.get(started.json()["statusUrl"]).json()["state"]
        finally:
            done.set()
            reader.join()
        print(f"job {state} after {time.perf_counter() - t0:.1f} s")
    print(_figures("another user's /healthz", healthz))
    print(_figures("another user's PUT", puts))


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
