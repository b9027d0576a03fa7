"""Claude Code hooks: `entity-memory hook session-start|session-end|pre-compact|stop`.

Claude Code runs a hook command with the event as JSON on stdin (`session_id`,
`transcript_path`, `cwd`, `hook_event_name`, and `source` / `reason` / `trigger`).

* `session-start` prints the `<entity_memory>` block for the project as SessionStart context:
  `{"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "..."}}`.
  It gives up on the service `ENTITY_MEMORY_HOOK_TIMEOUT` seconds (default 0.5) after it
  started; it then prints the context the last answer cached for this user and project (under
  `~/.entity-memory/cache/`), and when the service was slow rather than down, refreshes that
  cache in a detached process.
* `session-end`, `pre-compact` and `stop` hand the transcript to a detached background process
  (`python -m entity_memory_client.cli extract ...`) and return at once; the service's
  processed-session tracking makes re-sends cost nothing. `stop` fires after every response
  (each extraction may be an LLM call), so it uploads only when the transcript grew, at most
  once per `ENTITY_MEMORY_STOP_INTERVAL_MIN` minutes (default 10) per session, and never while
  another upload of the session runs; SessionEnd and PreCompact always upload (waiting for a
  running upload of the session to finish first).
* Failures are shown where the user looks: the next session-start context carries a one-line
  notice when the service was unreachable or the last upload failed or was degraded.

A hook never blocks or fails the session: whatever happens it exits 0, quickly; errors go to
stderr and to the log file `ENTITY_MEMORY_HOOK_LOG` (default `~/.entity-memory/hooks.log`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from . import settings as settings_mod
from .mcp_config import mcp_configured

#: The hook's whole budget, counted from the process's start (Python's own start-up included,
#: where /proc tells it).
DEFAULT_TIMEOUT_S = 0.5
#: Of the budget, what printing the cached context, starting the refresh and exiting take.
EXIT_MARGIN_S = 0.05
#: Set in the detached process that refreshes the cached context.
REFRESH_ENV = "ENTITY_MEMORY_HOOK_REFRESH"
#: Minutes between two Stop-hook uploads of one session.
DEFAULT_STOP_INTERVAL_MIN = 10.0
#: A lock older than this belongs to an upload that died; it is taken over.
LOCK_STALE_S = 15 * 60
#: How long SessionEnd's upload waits for a running upload of the same session.
LOCK_WAIT_S = 5 * 60
#: The one line that tells the agent it can write to the memory itself.
REMEMBER_HINT = (
    "You can save durable facts (decisions, preferences, metrics) for later sessions with "
    "the entity-memory MCP tool `remember`."
)
_SAFE = re.compile(r"[^A-Za-z0-9._@+-]+")


def log_path() -> Path:
    explicit = os.environ.get("ENTITY_MEMORY_HOOK_LOG")
    return Path(explicit) if explicit else settings_mod.home() / "hooks.log"


def log(message: str, *, to_stderr: bool = True) -> None:
    line = f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {message}"
    if to_stderr:
        print(f"entity-memory: {message}", file=sys.stderr)
    try:
        path = log_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as fh:
            fh.write(line + "\n")
    except OSError:
        pass


def read_payload() -> dict[str, Any]:
    if sys.stdin is None or sys.stdin.isatty():
        return {}
    raw = sys.stdin.read()
    if not raw.strip():
        return {}
    data = json.loads(raw)
    return data if isinstance(data, dict) else {}


def session_task(payload: dict[str, Any]) -> str:
    """What a new session is about, as far as a hook can tell: the project it runs in."""
    cwd = payload.get("cwd") or os.getcwd()
    project = Path(str(cwd)).name or str(cwd)
    task = os.environ.get("ENTITY_MEMORY_TASK")
    return (
        task
        or f"Working on project {project} ({cwd}); recall relevant preferences, "
        "pain points, decisions, campaigns and metrics."
    )


def _cache_file(user: str, cwd: str) -> Path:
    key = hashlib.sha256(f"{user}\n{cwd}".encode()).hexdigest()[:20]
    return settings_mod.home() / "cache" / f"context-{key}.json"


def _print_context(
    context: str, note: str = "", notices: list[str] | None = None, *, hint: bool = False
) -> None:
    """`hint`: the MCP server is configured here, so the agent has `remember` to call."""
    lines = [f"Notice (entity-memory): {n}" for n in notices or []]
    if context:
        lines.append(f"Long-term memory of this user (entity-memory){note}:\n{context}")
    if hint:
        lines.append(REMEMBER_HINT)
    if not lines:
        return
    output = {
        "hookSpecificOutput": {
            "hookEventName": "SessionStart",
            "additionalContext": "\n".join(lines),
        }
    }
    sys.stdout.write(json.dumps(output) + "\n")
    sys.stdout.flush()


def _refresh_in_background(payload: dict[str, Any], args: Any) -> None:
    """Fetch the context without a deadline in a detached process, for the cache."""
    cmd = [sys.executable, "-m", "entity_memory_client.cli", "hook", "session-start"]
    env = {**os.environ, "ENTITY_MEMORY_HOOK_TIMEOUT": "60", REFRESH_ENV: "1"}
    env.update(_child_settings(args))
    log_file = log_path()
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with log_file.open("a", encoding="utf-8") as out:
        child = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=out,
            env=env,
            start_new_session=True,
            close_fds=True,
        )
    assert child.stdin is not None
    with contextlib.suppress(OSError):
        child.stdin.write(json.dumps(payload).encode())
        child.stdin.close()


def fetch_context(
    url: str, token: str | None, user: str, task: str, timeout: float
) -> dict[str, Any]:
    """The context route with the standard library only: on a busy machine importing httpx
    alone took longer than the hook's whole budget (0.57 s at load 8 on 2 cores), so the
    hook gave up before it had asked anything."""
    from urllib.error import HTTPError
    from urllib.parse import quote
    from urllib.request import Request, urlopen

    body = json.dumps({"task": task, "limit": 20, "max_tokens": 3000}).encode()
    headers = {"content-type": "application/json", "user-agent": "entity-memory-hook"}
    if token:
        headers["authorization"] = f"Bearer {token}"
    path = f"/v1/users/{quote(user, safe='')}/context"
    request = Request(url.rstrip("/") + path, data=body, headers=headers, method="POST")
    try:
        with urlopen(request, timeout=timeout) as response:
            result: dict[str, Any] = json.loads(response.read())
    except HTTPError as exc:
        raise RuntimeError(
            f"HTTP {exc.code}: {exc.read()[:300].decode(errors='replace')}"
        ) from None
    return result


def process_start(fallback: float) -> float:
    """When this process started, on the monotonic clock: the budget is the user's wait, and
    on a busy machine the interpreter's own start-up took a quarter of it before our first
    line ran. Linux's /proc says; elsewhere `fallback` (our first line)."""
    try:
        stat = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        age = uptime - int(stat[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return fallback
    return min(fallback, time.monotonic() - max(0.0, age))


def session_start(payload: dict[str, Any], args: Any, started: float) -> None:
    """Print the context within the budget; if the service does not answer in time, the
    context cached by the last answer (and a detached refresh of that cache)."""
    cfg = settings_mod.resolve(args.url, args.token, args.user)
    if not cfg.user:
        log("session-start: no user id configured (--user, ENTITY_MEMORY_USER or config file)")
        return
    refreshing = os.environ.get(REFRESH_ENV) == "1"
    timeout = float(os.environ.get("ENTITY_MEMORY_HOOK_TIMEOUT") or DEFAULT_TIMEOUT_S)
    cwd = str(payload.get("cwd") or os.getcwd())
    hint = mcp_configured(cwd)
    cache = _cache_file(cfg.user, cwd)
    box: dict[str, Any] = {}

    def fetch() -> None:
        try:
            box["result"] = fetch_context(
                cfg.url, cfg.token, cfg.user, session_task(payload), timeout
            )
        except Exception as exc:
            box["error"] = exc

    # httpx's timeout is per phase (connect, read, ...); this is the hook's whole budget.
    worker = threading.Thread(target=fetch, daemon=True)
    worker.start()
    worker.join(max(0.05, timeout - EXIT_MARGIN_S - (time.monotonic() - started)))
    notices = upload_notices()
    if worker.is_alive() or "error" in box:
        why = box.get("error") or f"no answer within {timeout}s"
        log(f"session-start: {cfg.url}: {why}")
        if refreshing:
            return
        try:
            cached = json.loads(cache.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            cached = None
        notices.insert(0, f"the memory service at {cfg.url} did not answer ({why}).")
        if cached and cached.get("context"):
            at = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(cached.get("at", 0)))
            _print_context(cached["context"], f", as of {at}", notices, hint=hint)
        else:
            _print_context("", notices=notices, hint=hint)
        if worker.is_alive():  # slow rather than down: fill the cache for next time
            _refresh_in_background(payload, args)
        return
    result = box["result"]
    entities = result.get("entities") or []
    context = result["context"] if entities else ""
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps({"at": time.time(), "context": context}), encoding="utf-8")
    except OSError:
        pass
    if not refreshing:
        _print_context(context, notices=notices, hint=hint)


def _child_settings(args: Any) -> dict[str, str]:
    """The hook's --url/--token/--user for a child process, by environment (not argv, where
    a token would be visible to every user of the machine)."""
    names = {
        "url": "ENTITY_MEMORY_URL",
        "token": "ENTITY_MEMORY_TOKEN",
        "user": "ENTITY_MEMORY_USER",
    }
    return {env: str(getattr(args, key)) for key, env in names.items() if getattr(args, key, None)}


def _state_file(session_id: str) -> Path:
    return settings_mod.home() / "state" / f"{_SAFE.sub('-', session_id)[:100]}.json"


def _grew(session_id: str, transcript: Path) -> bool:
    """Whether the transcript changed since the last upload a hook started for the session."""
    try:
        st = transcript.stat()
    except OSError:
        return False
    mark = {"size": st.st_size, "mtime": st.st_mtime_ns}
    state = _state_file(session_id)
    try:
        if json.loads(state.read_text()) == mark:
            return False
    except (OSError, ValueError):
        pass
    try:
        state.parent.mkdir(parents=True, exist_ok=True)
        state.write_text(json.dumps(mark))
    except OSError:
        pass
    return True


def upload_in_background(payload: dict[str, Any], args: Any, event: str) -> None:
    transcript = payload.get("transcript_path")
    session_id = payload.get("session_id")
    if not transcript or not session_id:
        log(f"{event}: payload has no transcript_path or session_id; nothing to upload")
        return
    path = Path(str(transcript)).expanduser()
    if not path.is_file():
        log(f"{event}: transcript {path} does not exist")
        return
    session = _SAFE.sub("-", str(session_id)).strip("-.")[:128] or "session"
    if event == "stop":
        if _lock_file(session).exists() and not _stale(_lock_file(session)):
            return  # an upload of this session is running
        if _uploaded_within(session, stop_interval_s()):
            return
        if not _grew(str(session_id), path):
            return  # nothing new since the last upload: the cheap path
    else:
        _grew(str(session_id), path)  # remember it, so the next Stop does not repeat it
    _mark_upload(session)
    cmd = [sys.executable, "-m", "entity_memory_client.cli", "extract", "--quiet"]
    cmd += ["--record-status", "--session", session, str(path)]
    log_file = log_path()
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with log_file.open("a", encoding="utf-8") as out:
        out.write(
            f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {event}: uploading "
            f"{path} as session {session}\n"
        )
        out.flush()
        subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            env={**os.environ, **_child_settings(args)},
            start_new_session=True,
            close_fds=True,
            cwd=str(settings_mod.home()) if settings_mod.home().is_dir() else None,
        )


def stop_interval_s() -> float:
    raw = os.environ.get("ENTITY_MEMORY_STOP_INTERVAL_MIN")
    try:
        minutes = float(raw) if raw else DEFAULT_STOP_INTERVAL_MIN
    except ValueError:
        minutes = DEFAULT_STOP_INTERVAL_MIN
    return max(0.0, minutes) * 60


def _upload_mark(session: str) -> Path:
    return settings_mod.home() / "state" / f"{session[:100]}.uploaded"


def _uploaded_within(session: str, seconds: float) -> bool:
    try:
        return time.time() - _upload_mark(session).stat().st_mtime < seconds
    except OSError:
        return False


def _mark_upload(session: str) -> None:
    mark = _upload_mark(session)
    try:
        mark.parent.mkdir(parents=True, exist_ok=True)
        mark.touch()
    except OSError:
        pass


def _lock_file(session: str) -> Path:
    return settings_mod.home() / "state" / f"{session[:100]}.lock"


def _stale(lock: Path) -> bool:
    try:
        return time.time() - lock.stat().st_mtime > LOCK_STALE_S
    except OSError:
        return True


@contextlib.contextmanager
def upload_lock(session: str, wait_s: float = LOCK_WAIT_S) -> Any:
    """Hold the session's upload lock (a file created exclusively), waiting up to `wait_s` for
    a running upload of the same session; a stale lock (a dead upload) is taken over."""
    lock = _lock_file(_SAFE.sub("-", session))
    lock.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + wait_s
    while True:
        try:
            os.close(os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            break
        except FileExistsError:
            if _stale(lock):
                with contextlib.suppress(OSError):
                    lock.unlink()
                continue
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"another upload of session {session} is still running"
                ) from None
            time.sleep(0.5)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            lock.unlink()


def _status_file() -> Path:
    return settings_mod.home() / "state" / "last-upload.json"


def record_upload_status(outcomes: list[dict[str, Any]]) -> None:
    """What the last hook upload achieved, for the next session-start notice and `doctor`."""
    errors = [o["error"] for o in outcomes if "error" in o]
    degraded = [o for o in outcomes if o.get("degraded")]
    status: dict[str, Any] = {"at": time.time(), "ok": not errors}
    if errors:
        status["error"] = f"{errors[0].get('code')}: {errors[0].get('message')}"
    if degraded:
        status["degraded"] = True
        status["degradedReason"] = degraded[0].get("degradedReason") or degraded[0].get(
            "fallbackReason"
        )
    try:
        path = _status_file()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(status), encoding="utf-8")
    except OSError:
        pass


def read_upload_status() -> dict[str, Any] | None:
    try:
        data = json.loads(_status_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def upload_notices() -> list[str]:
    """One line about the last upload when it needs the user's attention."""
    status = read_upload_status()
    if not status:
        return []
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(status.get("at", 0)))
    if not status.get("ok", True):
        return [f"the last upload to memory ({when}) failed: {status.get('error')}."]
    if status.get("degraded"):
        return [f"the last upload to memory ({when}) was degraded: {status.get('degradedReason')}."]
    return []


def run(event: str, args: Any, started: float | None = None) -> int:
    """Run one hook; always 0 (a memory hook must never fail the user's session)."""
    try:
        payload = read_payload()
        if event == "session-start":
            session_start(payload, args, time.monotonic() if started is None else started)
        else:
            if event == "stop" and payload.get("stop_hook_active"):
                return 0
            upload_in_background(payload, args, event)
    except Exception as exc:  # a memory hook must never fail the session
        log(f"{event}: {type(exc).__name__}: {exc}")
        try:
            with log_path().open("a", encoding="utf-8") as fh:
                fh.write(traceback.format_exc())
        except OSError:
            pass
    return 0
