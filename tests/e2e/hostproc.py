"""Start and stop the real local host (Pyodide + Miniflare) in a subprocess.

Used by the end-to-end fixtures and by the benchmarks. Needs what `scripts/setup` produces
(node_modules/, local/.wheels/). Every failure raises `HostError` with the host's output.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.e2e import miniflare_state

REPO = Path(__file__).resolve().parents[2]
READY = re.compile(r"ready on (http://\S+) in (\d+) ms")
START_TIMEOUT_S = 120
# No prompts, no telemetry, no colour codes in what the tests parse. node_modules/.bin first:
# there scripts/setup links the node wrangler needs when the system's is older.
CLI_ENV = {
    **os.environ,
    "PATH": os.pathsep.join([str(REPO / "node_modules" / ".bin"), os.environ.get("PATH", "")]),
    "CI": "true",
    "WRANGLER_SEND_METRICS": "false",
    "NO_COLOR": "1",
}

#: `NAME=VALUE` pairs (whitespace-separated) every host started here gets as `--var`, after
#: the fixture's own: runs a test file against another mode of the Worker without copying it,
#: e.g. `ENTITY_MEMORY_HOST_VARS=WRITE_ACK=committed pytest tests/e2e/test_writer_e2e.py`.
HOST_VARS_ENV = "ENTITY_MEMORY_HOST_VARS"


def host_vars() -> list[str]:
    """The `--var` arguments `HOST_VARS_ENV` asks for."""
    return [arg for pair in os.environ.get(HOST_VARS_ENV, "").split() for arg in ("--var", pair)]


def answers_indexed() -> bool:
    """Whether the hosts started here answer a write once KV's index holds it (the default,
    `WRITE_ACK=indexed`), rather than once the writer has committed it."""
    return "WRITE_ACK=committed" not in os.environ.get(HOST_VARS_ENV, "").split()


#: With `WRITE_ACK=committed`, a ceiling for KV's index to catch up with what the API served
#: on a busy machine: a bound on a state being reached, not a measurement.
PUBLISHED_WITHIN_S = 60


class HostError(RuntimeError):
    """The host or a wrangler command against its state failed."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Host:
    base_url: str
    #: The host's `--persist` directory (Miniflare's `v3` folder).
    persist_dir: Path
    startup_ms: int
    process: subprocess.Popen[str]
    output: list[str] = field(default_factory=list)

    @property
    def persist_to(self) -> Path:
        """What wrangler's `--persist-to` takes: the parent of `v3`."""
        return self.persist_dir.parent

    def wrangler(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """`npx wrangler <args> --local --persist-to <state>`, run from the repo, checked."""
        cmd = ["npx", "--no-install", "wrangler", *args, "--local"]
        cmd += ["--persist-to", str(self.persist_to)]
        for attempt in range(6):
            done = subprocess.run(
                cmd, cwd=REPO, env=CLI_ENV, capture_output=True, text=True, timeout=timeout
            )
            # The host's Miniflare and this one share the SQLite files; a write in flight on
            # the host makes this one see SQLITE_BUSY for a moment. Anything else is a failure.
            if done.returncode == 0 or "SQLITE_BUSY" not in done.stdout + done.stderr:
                break
            time.sleep(0.5 * (attempt + 1))
        if done.returncode != 0:
            raise HostError(f"{cmd} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
        return done

    def d1(self, sql: str) -> list[dict]:
        """Rows of one read-only SQL statement against the host's local D1 (HISTORY)."""
        return miniflare_state.d1(self.persist_dir, sql)

    def kv_list(self, prefix: str) -> list[dict]:
        return miniflare_state.kv_list(self.persist_dir, prefix)

    def kv_get(self, key: str) -> str:
        """A key's value; "" when absent (as `wrangler kv key get` prints nothing)."""
        return miniflare_state.kv_get(self.persist_dir, key) or ""

    def answered_index(self, user: str) -> str:
        """KV's index of `user` once a write was answered, as `kv_get` gives it.

        Answered once indexed (the default), it is read at once. With `WRITE_ACK=committed`
        it is published behind the answer: the API must list at once what the writer holds
        (a reader's own writes), and KV's index must then reach exactly that."""
        key = f"index:{user}:entities"
        if answers_indexed():
            return self.kv_get(key)
        with httpx.Client(base_url=self.base_url, timeout=120) as c:
            listed = c.get(f"/v1/users/{user}/entities")
        listed.raise_for_status()
        served = {(e["type"], e["id"]) for e in listed.json()["entities"]}
        deadline = time.monotonic() + PUBLISHED_WITHIN_S
        while True:
            raw = self.kv_get(key)
            in_kv = {(e["type"], e["id"]) for e in (json.loads(raw)["entries"] if raw else [])}
            if in_kv == served:
                return raw
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"KV's index of {user} never reached what the API served: "
                    f"only served {sorted(served - in_kv)[:5]}, only in KV "
                    f"{sorted(in_kv - served)[:5]}"
                )
            time.sleep(0.2)

    def vectors_made(self, user: str, timeout_s: float = 120) -> dict:
        """The user's index once every entry has its vector: a PUT is answered before the
        writer's alarm embeds its texts (service/vector_backlog.py)."""
        deadline = time.monotonic() + timeout_s
        while True:
            raw = self.kv_get(f"index:{user}:entities")
            index = json.loads(raw) if raw else {"entries": []}
            if index["entries"] and all(e.get("vec") for e in index["entries"]):
                return index
            if time.monotonic() > deadline:
                raise AssertionError(f"{user}'s vectors were not made in {timeout_s} s")
            time.sleep(0.2)

    def run_host(self, *args: str, timeout: float = START_TIMEOUT_S) -> subprocess.CompletedProcess:
        """Another `node local/host.mjs` run (e.g. --selftest-kv) on this session's state."""
        cmd = ["node", "local/host.mjs", "--persist", str(self.persist_dir), *args]
        return subprocess.run(
            cmd, cwd=REPO, env=CLI_ENV, capture_output=True, text=True, timeout=timeout
        )


def _check_setup() -> None:
    needed = ("node_modules/wrangler", "node_modules/pyodide")
    missing = [path for path in needed if not (REPO / path).exists()]
    if not any((REPO / "local/.wheels").glob("*.whl")):
        missing.append("local/.wheels/*.whl")
    if missing:
        raise HostError(f"run scripts/setup first; missing: {', '.join(missing)}")


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is not None:
        return
    process.terminate()  # the host disposes Miniflare on SIGTERM
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        # The host runs in its own process group: take its workerd child down with it.
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def pending_migrations(persist_dir: Path) -> list[str]:
    """migrations/*.sql names not yet in the d1_migrations table of the state's D1 file
    (all of them when there is no such file or table yet)."""
    wanted = sorted(p.name for p in (REPO / "migrations").glob("*.sql"))
    try:
        rows = miniflare_state.d1(persist_dir, "SELECT name FROM d1_migrations")
    except (FileNotFoundError, sqlite3.OperationalError):
        return wanted
    applied = {row["name"] for row in rows}
    return [name for name in wanted if name not in applied]


def apply_pending_migrations(persist_dir: Path) -> None:
    """`wrangler d1 migrations apply` only when something is pending: spawning it costs
    2-4 s even when it has nothing to do."""
    if not pending_migrations(persist_dir):
        return
    migrate = subprocess.run(
        [
            "npx",
            "--no-install",
            "wrangler",
            "d1",
            "migrations",
            "apply",
            "HISTORY",
            "--local",
            "--persist-to",
            str(persist_dir.parent),
        ],
        cwd=REPO,
        env=CLI_ENV,
        capture_output=True,
        text=True,
        timeout=180,
    )
    if migrate.returncode != 0:
        raise HostError(f"migrations failed:\n{migrate.stdout}\n{migrate.stderr}")
    if left := pending_migrations(persist_dir):
        raise HostError(f"migrations still pending after apply: {left}\n{migrate.stdout}")


def host_for_tests(
    tmp_path_factory: pytest.TempPathFactory, folder: str, *args: str, llm: bool = False
) -> Iterator[Host]:
    """A fixture's host on state of its own (`folder` under pytest's temporary directory); a
    host that cannot start fails the test that needs it, with the reason."""
    persist_dir = tmp_path_factory.mktemp(folder) / "v3"
    try:
        with start_host(persist_dir, args, llm=llm) as running:
            yield running
    except HostError as exc:
        pytest.fail(str(exc))


@contextmanager
def start_host(
    persist_dir: Path, extra_args: Sequence[str] = (), llm: bool = False
) -> Iterator[Host]:
    """A running host on a free port over `persist_dir` (Miniflare's `v3` folder).

    Pending D1 migrations are applied first, as `scripts/serve` and a deploy would; afterwards
    none may be pending (wrangler recorded every one).
    """
    persist_dir.parent.mkdir(parents=True, exist_ok=True)
    _check_setup()
    # A host with the local LLM starts its own llama-server (1.1 GB): only the tests of the
    # model path ask for one (or set ENTITY_MEMORY_LLM_URL to share a running server).
    extra_args = [*extra_args, *host_vars()]
    if not llm:
        extra_args = [*extra_args, "--no-llm"]
    stderr_path = persist_dir.parent / "host.stderr"
    port = _free_port()
    apply_pending_migrations(persist_dir)
    with stderr_path.open("w") as stderr:
        process = subprocess.Popen(
            [
                "node",
                "local/host.mjs",
                "--port",
                str(port),
                "--persist",
                str(persist_dir),
                *extra_args,
            ],
            cwd=REPO,
            env=CLI_ENV,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            start_new_session=True,
        )
    output: list[str] = []
    ready = threading.Event()
    found: dict[str, str] = {}

    def pump() -> None:
        # Keep draining stdout for the whole session so the host never blocks on a full pipe.
        assert process.stdout is not None
        for line in process.stdout:
            output.append(line)
            match = READY.search(line)
            if match and not ready.is_set():
                found.update(url=match[1], ms=match[2])
                ready.set()
        ready.set()  # the host exited

    threading.Thread(target=pump, daemon=True).start()
    deadline = time.monotonic() + START_TIMEOUT_S
    while not ready.wait(0.2) and time.monotonic() < deadline:
        pass
    if not found:
        try:  # stdout closing means the host is exiting: collect its exit code
            code = process.wait(timeout=10) if ready.is_set() else None
        except subprocess.TimeoutExpired:
            code = None
        _stop(process)
        why = f"exited with code {code}" if code is not None else f"not ready in {START_TIMEOUT_S}s"
        raise HostError(
            f"local host failed to start ({why}).\nstdout:\n{''.join(output)}\n"
            f"stderr:\n{stderr_path.read_text()}"
        )
    try:
        yield Host(
            base_url=found["url"],
            persist_dir=persist_dir,
            startup_ms=int(found["ms"]),
            process=process,
            output=output,
        )
    finally:
        _stop(process)
