"""`entity-memory install claude-code` merges its hooks into the per-user settings.local.json
(or, with --global, ~/.claude/settings.json), keeps everything else, and is idempotent."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import run_cli

EXISTING = {
    "model": "sonnet",
    "permissions": {"allow": ["Bash(npm run lint)"]},
    "hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}
        ],
        "SessionStart": [
            {"matcher": "startup", "hooks": [{"type": "command", "command": "cat NOTES.md"}]}
        ],
    },
}


def _commands(settings: dict, event: str) -> list[str]:
    return [h["command"] for group in settings["hooks"].get(event, []) for h in group["hooks"]]


def test_install_project_merges_into_existing_settings(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / ".claude").mkdir(parents=True)
    path = project / ".claude" / "settings.local.json"
    path.write_text(json.dumps(EXISTING, indent=2))
    shared = project / ".claude" / "settings.json"
    shared.write_text('{"model": "opus"}')
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}

    args = ["install", "claude-code", "--project", "--dir", str(project)]
    creds = ["--user", "dana", "--url", "https://mem.example", "--token", "emu_secret"]
    done = run_cli(*args, "--command", "entity-memory", *creds, env=env)
    assert done.returncode == 0, done.stderr
    first = json.loads(path.read_text())
    assert first["model"] == "sonnet" and first["permissions"] == EXISTING["permissions"]
    assert first["hooks"]["PreToolUse"] == EXISTING["hooks"]["PreToolUse"]
    assert _commands(first, "Stop") == ["notify-send done", "entity-memory hook stop"]
    assert _commands(first, "SessionStart") == ["cat NOTES.md", "entity-memory hook session-start"]
    assert _commands(first, "SessionEnd") == ["entity-memory hook session-end"]
    assert _commands(first, "PreCompact") == ["entity-memory hook pre-compact"]
    # who and where go to the per-user file's env, never into the shared settings.json
    assert first["env"] == {
        "ENTITY_MEMORY_USER": "dana",
        "ENTITY_MEMORY_URL": "https://mem.example",
        "ENTITY_MEMORY_TOKEN": "emu_secret",
    }
    assert shared.read_text() == '{"model": "opus"}'
    assert path.stat().st_mode & 0o077 == 0
    ours = first["hooks"]["SessionStart"][-1]
    assert ours["matcher"] == "startup|resume|clear|compact"
    assert ours["hooks"][0]["type"] == "command" and ours["hooks"][0]["timeout"] > 0

    # idempotent: installing again changes nothing
    again = run_cli(*args, "--command", "entity-memory", *creds, env=env)
    assert again.returncode == 0
    assert json.loads(path.read_text()) == first

    # a re-install with another command replaces ours, not theirs
    run_cli(*args, "--command", "/opt/em/bin/entity-memory", env=env)
    third = json.loads(path.read_text())
    assert _commands(third, "Stop") == ["notify-send done", "/opt/em/bin/entity-memory hook stop"]


def test_install_global_scope_and_default_command(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    done = run_cli("install", "claude-code", "--global", env=env)
    assert done.returncode == 0, done.stderr
    settings = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    command = _commands(settings, "SessionStart")[0]
    # the default runs this very installation (console script or python -m), whatever PATH is
    assert command.endswith("hook session-start")
    assert "entity-memory" in command or "entity_memory_client" in command

    config_dir = tmp_path / "cc-config"
    done = run_cli(
        "install", "claude-code", "--global", env={**env, "CLAUDE_CONFIG_DIR": str(config_dir)}
    )
    assert done.returncode == 0 and (config_dir / "settings.json").exists()


def test_install_leaves_a_broken_settings_file_alone(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.local.json"
    path.parent.mkdir()
    path.write_text('{"hooks": {')
    done = run_cli("install", "claude-code", "--dir", str(tmp_path), env={"HOME": str(tmp_path)})
    assert done.returncode == 2 and "not installed" in done.stderr
    assert path.read_text() == '{"hooks": {'
