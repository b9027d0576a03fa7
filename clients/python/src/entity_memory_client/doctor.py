"""`entity-memory doctor`: what stands between this machine and a working memory, in words.

Checks, in order: the settings resolve to a URL and a user; the service answers /healthz;
whether it checks tokens at all (a service without API_TOKEN accepts any); the token is accepted
for that user; the Claude Code hooks are installed; the last upload a hook
started succeeded. Every problem is printed with what to do about it; the exit code is 1 when
the service or the token does not work, 0 otherwise (missing hooks are a warning: MCP-only
users do not need them).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import hooks as hooks_mod
from . import install as install_mod
from . import settings as settings_mod

#: Seconds the doctor waits for each answer: long enough for a cold start, short enough to say
#: "down" promptly.
CHECK_TIMEOUT_S = 10.0


def _hook_files(project_dir: str) -> list[Path]:
    return [
        install_mod.settings_path("project", project_dir),
        Path(project_dir).resolve() / ".claude" / "settings.json",
        install_mod.settings_path("global"),
    ]


def installed_hooks(project_dir: str) -> list[Path]:
    """The settings files that hold our hooks."""
    found = []
    for path in _hook_files(project_dir):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        groups = (data.get("hooks") or {}).values() if isinstance(data, dict) else []
        if any(
            install_mod.is_ours(h)
            for group_list in groups
            if isinstance(group_list, list)
            for group in group_list
            if isinstance(group, dict)
            for h in group.get("hooks") or []
        ):
            found.append(path)
    return found


def _accepts_no_token(url: str) -> bool:
    """Whether the service answers an admin read with no token at all (no API_TOKEN set):
    then a token proves nothing, and "accepted" would be untrue."""
    import httpx

    try:
        r = httpx.get(url.rstrip("/") + "/v1/admin/tokens", timeout=CHECK_TIMEOUT_S)
    except httpx.HTTPError:
        return False
    return r.status_code == 200


def run(args: Any) -> int:
    from .client import ConnectionFailed, EntityMemory, EntityMemoryError

    problems = 0

    def say(ok: bool | None, text: str) -> None:
        mark = {True: "ok  ", False: "FAIL", None: "warn"}[ok]
        print(f"{mark} {text}")

    try:
        cfg = settings_mod.resolve(args.url, args.token, args.user)
    except settings_mod.ConfigError as exc:
        say(False, f"settings: {exc}")
        return 1
    say(True, f"service URL {cfg.url} (config file {settings_mod.config_path()})")
    if not cfg.user:
        say(False, "no user id: run `entity-memory init --user ID` or set ENTITY_MEMORY_USER")
        problems += 1

    with EntityMemory(
        cfg.url, cfg.token, user=cfg.user or "doctor", timeout=CHECK_TIMEOUT_S, max_retries=0
    ) as mem:
        try:
            mem.health()
            say(True, "the service answers /healthz")
        except EntityMemoryError as exc:
            say(
                False,
                f"the service at {cfg.url} does not answer ({exc}): start it "
                "(`scripts/serve` locally) or fix the URL with `entity-memory init --url`",
            )
            return 1
        open_service = _accepts_no_token(cfg.url)
        if open_service:
            say(
                None,
                "the service runs without API_TOKEN: it accepts every request, with any "
                "token or none (fine locally; production sets the secret)",
            )
        elif not cfg.token:
            say(
                False,
                "no token set, and the service requires one: `entity-memory init --token ...`"
                " or ENTITY_MEMORY_TOKEN",
            )
            problems += 1
        if cfg.user and (cfg.token or open_service):
            try:
                mem.list()
                if open_service:
                    say(True, f"user {cfg.user} can be read (no token is checked)")
                else:
                    say(True, f"the token is accepted for user {cfg.user}")
            except ConnectionFailed as exc:
                say(False, f"the service stopped answering: {exc}")
                problems += 1
            except EntityMemoryError as exc:
                if exc.status == 401:
                    say(
                        False,
                        "the token is missing, wrong or revoked: set a valid one with "
                        "`entity-memory init --token ...` or ENTITY_MEMORY_TOKEN",
                    )
                elif exc.status == 403:
                    say(False, f"the token belongs to another user than {cfg.user}")
                else:
                    say(False, f"listing the user's entities failed: {exc}")
                problems += 1
            else:
                _report_jobs(mem, say)

    found = installed_hooks(getattr(args, "dir", "."))
    if found:
        say(True, "Claude Code hooks installed in " + ", ".join(map(str, found)))
    else:
        say(None, "no Claude Code hooks found: `entity-memory install claude-code` adds them")
    status = hooks_mod.read_upload_status()
    if status and not status.get("ok", True):
        say(None, f"the last hook upload failed: {status.get('error')}")
    elif status and status.get("degraded"):
        say(None, f"the last hook upload was degraded: {status.get('degradedReason')}")
    return 1 if problems else 0


def _report_jobs(mem: Any, say: Callable[[bool | None, str], None]) -> None:
    """The user's extraction jobs: how many in each state, and the newest failure."""
    from .client import EntityMemoryError

    try:
        jobs = mem.jobs().get("jobs")
    except EntityMemoryError as exc:
        say(None, f"the extraction jobs could not be listed: {exc}")
        return
    if not isinstance(jobs, list):
        say(None, "the service does not list extraction jobs (a version before jobs?)")
        return
    if not jobs:
        say(True, "no extraction jobs yet")
        return
    states: dict[str, int] = {}
    for job in jobs:
        states[job["state"]] = states.get(job["state"], 0) + 1
    counts = ", ".join(f"{n} {state}" for state, n in sorted(states.items()))
    failed = next((j for j in jobs if j["state"] == "failed"), None)
    if failed is None:
        say(True, f"extraction jobs: {counts}")
    else:
        error = failed.get("error") or {}
        say(
            None,
            f"extraction jobs: {counts}; newest failure: job {failed['id']} (session"
            f" {failed['sessionId']}): {error.get('code')}: {error.get('message')}",
        )
