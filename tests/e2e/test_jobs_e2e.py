"""Extraction jobs on the real host: a long session is a job the user's writer runs off the
request path (its alarm), while other users are served; its status moves queued -> running ->
done; a re-sent session finds its job and is not run twice.

Issue #21: while a 2,000-message job runs, /healthz and another user's reads are answered. The
test asserts what does not depend on the machine's speed or load: other users' requests are
answered while the job is still running (between its chunks), not after it. How long they took
(median, p90, max) is printed as a figure; a bound on it would fail on a loaded machine.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import httpx
import pytest

from .hostproc import Host, host_for_tests

#: Messages in the long session of the shared host (five chunks, embeddings on).
LONG_SESSION = 200
#: The issue's session: 2,000 messages (50 chunks), each naming a distinct campaign.
ISSUE_SESSION = 2_000
#: Other users' requests that must be answered while the job still runs: a chunk that held
#: the host's event loop for the whole job would leave none.
SERVED_DURING_JOB = 3


def _session(size: int) -> list[dict[str, str]]:
    return [
        {"role": "user", "content": f"Campaign Tern {i} runs on a ${20 + i % 50}/day budget."}
        for i in range(size)
    ]


@dataclass
class Watched:
    """What a long job and another user's requests did while it ran."""

    states: list[tuple[str, int]]
    others: list[float] = field(default_factory=list)
    #: When each of the other user's requests was answered, and when the job was last seen
    #: queued or running (time.perf_counter()).
    answered_at: list[float] = field(default_factory=list)
    running_until: float = 0.0
    seconds: float = 0.0
    status: dict = field(default_factory=dict)

    def report(self, label: str) -> str:
        ms = sorted(x * 1000 for x in self.others)
        p90 = ms[int(0.9 * (len(ms) - 1))]
        return (
            f"\n{label}: job {self.seconds:.1f} s for {self.status['chunksTotal']} chunks"
            f" ({self.seconds / self.status['chunksTotal'] * 1000:.0f} ms a chunk);"
            f" {len(ms)} requests of another user meanwhile: median"
            f" {statistics.median(ms):.0f} ms, p90 {p90:.0f} ms, max {ms[-1]:.0f} ms"
        )


def _run_long_job(host: Host, user: str, other: str, size: int) -> Watched:
    """Start a `size`-message job for `user`, poll it until it ends, and meanwhile time
    /healthz and `other`'s reads from another connection."""
    with httpx.Client(base_url=host.base_url, timeout=120) as c:
        seed = {"session_id": "s0", "entities": [{"type": "campaign", "name": "Other Alpha"}]}
        assert c.put(f"/v1/users/{other}/entities", json=seed).status_code == 200
        body = {"messages": _session(size), "extractor": "rules"}
        started = c.post(f"/v1/users/{user}/sessions/long/extract", json=body)
        assert started.status_code == 202, started.text
        status_url = started.json()["statusUrl"]
        watched = Watched(states=[(started.json()["job"]["state"], 0)])
        done = threading.Event()

        def other_user() -> None:
            with httpx.Client(base_url=host.base_url, timeout=120) as o:
                while not done.is_set():
                    for method, url, payload in (
                        ("GET", "/healthz", None),
                        ("POST", f"/v1/users/{other}/context", {"task": "Alpha"}),
                        ("GET", f"/v1/users/{other}/entities", None),
                    ):
                        t0 = time.perf_counter()
                        r = o.request(method, url, json=payload)
                        watched.answered_at.append(time.perf_counter())
                        watched.others.append(watched.answered_at[-1] - t0)
                        assert r.status_code == 200, r.text

        reader = threading.Thread(target=other_user)
        t0 = time.perf_counter()
        reader.start()
        try:
            while watched.states[-1][0] in ("queued", "running"):
                asked = time.perf_counter()
                job = c.get(status_url).json()
                if job["state"] in ("queued", "running"):
                    watched.running_until = asked  # all answered before this, answered during
                watched.states.append((job["state"], job["chunksDone"]))
                time.sleep(0.5)
        finally:
            done.set()
            reader.join()
        watched.seconds = time.perf_counter() - t0
        watched.status = c.get(status_url).json()
        return watched


def _check(watched: Watched, size: int) -> None:
    kinds = [s for s, _ in watched.states]
    assert kinds[0] == "queued" and "running" in kinds and kinds[-1] == "done", kinds
    assert [n for _, n in watched.states] == sorted(n for _, n in watched.states)  # only grows
    assert watched.status["chunksDone"] == watched.status["chunksTotal"]
    names = " | ".join(e["name"] for e in watched.status["result"]["entities"]) + " |"
    assert "Tern 0 |" in names and f"Tern {size - 1} |" in names  # first, last chunk
    # Other users' requests were served between the job's chunks, not after the job.
    during = [t for t in watched.answered_at if t < watched.running_until]
    assert len(during) >= SERVED_DURING_JOB, (len(during), len(watched.answered_at))


def test_a_long_job_runs_while_other_users_are_served(host: Host) -> None:
    watched = _run_long_job(host, "e2e-jobs", "e2e-jobs-other", LONG_SESSION)
    print(watched.report(f"{LONG_SESSION} messages, embeddings on"))
    _check(watched, LONG_SESSION)
    with httpx.Client(base_url=host.base_url, timeout=120) as c:
        body = {"messages": _session(LONG_SESSION), "extractor": "rules"}
        again = c.post("/v1/users/e2e-jobs/sessions/long/extract", json=body)
        assert again.status_code == 200 and again.json()["processed"] is False
        assert again.json()["job"]["resent"] is True
        jobs = c.get("/v1/users/e2e-jobs/jobs").json()["jobs"]
        assert len(jobs) == 1  # the re-send made no second job


@pytest.fixture(scope="module")
def lexical_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Host]:
    """A host with embeddings off: the local embedding model on a shared 2-CPU box costs
    ~4 s a chunk (80 texts), which would make the 2,000-message job take minutes; what the
    issue measures is the job's own work against other users' requests."""
    yield from host_for_tests(tmp_path_factory, "wrangler-jobs", "--var", "EMBEDDING_MODEL=off")


def test_a_2000_message_job_reaches_done_while_other_users_are_served(
    lexical_host: Host,
) -> None:
    """Issue #21 (slow: ~40 s of job on a loaded 2-CPU box, embeddings off)."""
    watched = _run_long_job(lexical_host, "e2e-jobs-2k", "e2e-jobs-2k-other", ISSUE_SESSION)
    print(watched.report(f"{ISSUE_SESSION} messages, embeddings off"))
    _check(watched, ISSUE_SESSION)
    assert len(watched.status["result"]["entities"]) >= ISSUE_SESSION
