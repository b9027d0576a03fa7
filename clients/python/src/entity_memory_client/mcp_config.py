"""Whether Claude Code has the entity-memory MCP server configured for a project, so the
SessionStart text mentions the `remember` tool only where the agent really has it.

Claude Code reads MCP servers from the project's `.mcp.json`, and from `~/.claude.json` (its
top-level `mcpServers`, and `projects[<dir>].mcpServers`; `$CLAUDE_CONFIG_DIR/.claude.json`
when that is set). A server is ours when its name, command or arguments name entity-memory's
MCP server.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

MARKERS = ("entity-memory-mcp", "entity_memory_client.mcp_server", "entity-memory mcp")


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _is_ours(name: str, server: Any) -> bool:
    if not isinstance(server, dict):
        return False
    words = [name, str(server.get("command") or "")]
    args = server.get("args")
    if isinstance(args, list):
        words += [str(a) for a in args]
    text = " ".join(words)
    return name == "entity-memory" or any(m in text for m in MARKERS)


def _has_ours(servers: Any) -> bool:
    return isinstance(servers, dict) and any(_is_ours(str(n), s) for n, s in servers.items())


def user_config_path() -> Path:
    base = os.environ.get("CLAUDE_CONFIG_DIR")
    return (Path(base) if base else Path.home()) / ".claude.json"


def mcp_configured(project_dir: str | Path) -> bool:
    """True when the entity-memory MCP server is configured for `project_dir`."""
    project = Path(project_dir).resolve()
    for directory in (project, *project.parents):
        if _has_ours(_read(directory / ".mcp.json").get("mcpServers")):
            return True
    user = _read(user_config_path())
    if _has_ours(user.get("mcpServers")):
        return True
    projects = user.get("projects")
    if isinstance(projects, dict):
        for directory in (project, *project.parents):
            entry = projects.get(str(directory))
            if isinstance(entry, dict) and _has_ours(entry.get("mcpServers")):
                return True
    return False
