"""`entity-memory install claude-code [--project|--global] [--url U] [--token T] [--user ID]`.

The hooks are merged into `.claude/settings.local.json` (project, the default: Claude Code's
per-user file, which git ignores, so an absolute path to this installation, a user id or a
token never land in the shared `.claude/settings.json`) or `~/.claude/settings.json`
(`--global`; `$CLAUDE_CONFIG_DIR/settings.json` when that is set). `--url`, `--token` and
`--user` go into that file's `env`, which Claude Code passes to the hooks.
In a git work tree the project file is kept out of git: added to `.gitignore` when nothing
ignores it yet, and a token is refused for a file git tracks. Every other setting and every
other hook is kept; our own entries (recognised by their
`entity-memory hook` / `entity_memory_client` command) are replaced, so installing twice
changes nothing. A settings file that is not valid JSON is left alone (exit 2).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

#: Claude Code event -> (our hook, matcher or None, timeout in seconds).
HOOKS: dict[str, tuple[str, str | None, int]] = {
    "SessionStart": ("session-start", "startup|resume|clear|compact", 10),
    "PreCompact": ("pre-compact", "manual|auto", 10),
    "Stop": ("stop", None, 10),
    "SessionEnd": ("session-end", None, 10),
}
MARKERS = (
    "entity-memory hook",
    "entity_memory_client.cli hook",
    'entity-memory" hook',
    "entity-memory' hook",
)


def default_base_command() -> str:
    """How a hook runs this CLI: the installed console script, else `python -m`."""
    exe = shutil.which("entity-memory")
    if exe:
        return shlex.quote(exe)
    script = Path(sys.executable).parent / "entity-memory"
    if script.exists():
        return shlex.quote(str(script))
    return f"{shlex.quote(sys.executable)} -m entity_memory_client.cli"


def settings_path(scope: str, project_dir: str | Path = ".") -> Path:
    if scope == "global":
        base = os.environ.get("CLAUDE_CONFIG_DIR")
        return (Path(base) if base else Path.home() / ".claude") / "settings.json"
    return Path(project_dir).resolve() / ".claude" / "settings.local.json"


#: Where the hooks read their settings from (see `entity_memory_client.settings`).
ENV_NAMES = {
    "url": "ENTITY_MEMORY_URL",
    "token": "ENTITY_MEMORY_TOKEN",
    "user": "ENTITY_MEMORY_USER",
}


def is_ours(hook: Any) -> bool:
    command = hook.get("command", "") if isinstance(hook, dict) else ""
    return isinstance(command, str) and any(m in command for m in MARKERS)


def merge_hooks(
    settings: dict[str, Any], base_command: str, env: dict[str, str] | None = None
) -> dict[str, Any]:
    """`settings` with our hooks replacing any earlier copy of them and `env` merged into its
    `env`, everything else kept."""
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ValueError('"hooks" in the settings file is not an object')
    if env:
        current = settings.setdefault("env", {})
        if not isinstance(current, dict):
            raise ValueError('"env" in the settings file is not an object')
        current.update(env)
    for event, (name, matcher, timeout) in HOOKS.items():
        groups = hooks.get(event) or []
        if not isinstance(groups, list):
            raise ValueError(f'"hooks.{event}" in the settings file is not a list')
        kept = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                others = [h for h in group["hooks"] if not is_ours(h)]
                if not others:
                    continue
                group = {**group, "hooks": others}
            kept.append(group)
        ours: dict[str, Any] = {
            "hooks": [
                {
                    "type": "command",
                    "command": f"{base_command} hook {name}",
                    "timeout": timeout,
                }
            ]
        }
        if matcher is not None:
            ours = {"matcher": matcher, **ours}
        hooks[event] = [*kept, ours]
    return settings


def _git(project: Path, *args: str) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(
            ["git", "-C", str(project), *args], capture_output=True, text=True, check=False
        )
    except OSError:  # no git on this machine
        return None


def ensure_ignored(path: Path, token_given: bool) -> str | None:
    """Keep a settings file that may hold a token out of git: in a work tree, a tracked file
    with a token is refused (ValueError); an untracked one not yet ignored is added to the
    repository's .gitignore. Returns what was done, for the user, or None."""
    existing = next(p for p in path.parents if p.exists())  # .claude/ may not exist yet
    top = _git(existing, "rev-parse", "--show-toplevel")
    if top is None or top.returncode != 0:
        return None  # not in a git work tree
    root = Path(top.stdout.strip())
    rel = path.resolve().relative_to(root.resolve()).as_posix()
    tracked = _git(root, "ls-files", "--error-unmatch", rel)
    if tracked is not None and tracked.returncode == 0:
        if token_given:
            raise ValueError(
                f"{path} is tracked by git, so the token would be committed: untrack it "
                "(`git rm --cached`) or give the token as ENTITY_MEMORY_TOKEN instead"
            )
        return None
    ignored = _git(root, "check-ignore", "-q", rel)
    if ignored is not None and ignored.returncode == 0:
        return None
    gitignore = root / ".gitignore"
    text = gitignore.read_text(encoding="utf-8") if gitignore.exists() else ""
    with gitignore.open("a", encoding="utf-8") as fh:
        if text and not text.endswith("\n"):
            fh.write("\n")
        fh.write(f"# entity-memory hooks: may hold a token\n/{rel}\n")
    return f"added /{rel} to {gitignore}"


def install_claude_code(
    scope: str = "project",
    project_dir: str | Path = ".",
    base_command: str | None = None,
    user: str | None = None,
    url: str | None = None,
    token: str | None = None,
) -> Path:
    path = settings_path(scope, project_dir)
    note = ensure_ignored(path, bool(token)) if scope == "project" else None
    if path.exists():
        text = path.read_text(encoding="utf-8")
        settings = json.loads(text) if text.strip() else {}
        if not isinstance(settings, dict):
            raise ValueError(f"{path} does not hold a JSON object")
    else:
        settings = {}
    given = {"url": url, "token": token, "user": user}
    env = {ENV_NAMES[k]: v for k, v in given.items() if v}
    merged = merge_hooks(settings, base_command or default_base_command(), env)
    path.parent.mkdir(parents=True, exist_ok=True)
    # mkstemp's file is private (0600): right for a file that may hold a token.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".settings.", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(merged, fh, indent=2, ensure_ascii=False)
        fh.write("\n")
    os.replace(tmp, path)
    if note:
        print(f"entity-memory: {note}", file=sys.stderr)
    return path


def run(args: Any) -> int:
    try:
        path = install_claude_code(
            args.scope,
            args.dir,
            args.base_command,
            getattr(args, "memory_user", None),
            getattr(args, "url", None),
            getattr(args, "token", None),
        )
    except (ValueError, OSError) as exc:
        print(f"entity-memory: not installed: {exc}", file=sys.stderr)
        return 2
    print(f"installed entity-memory hooks (SessionStart, PreCompact, Stop, SessionEnd) in {path}")
    return 0
