"""Where the CLI, hooks and MCP server find the service URL, token and user id.

Each value is taken from the first of:

1. the command-line flag (`--url`, `--token`, `--user`),
2. the environment (`ENTITY_MEMORY_URL`, `ENTITY_MEMORY_TOKEN`, `ENTITY_MEMORY_USER`),
3. the config file: `$ENTITY_MEMORY_CONFIG`, else `$ENTITY_MEMORY_HOME/config.json`
   (`ENTITY_MEMORY_HOME` defaults to `~/.entity-memory`), a JSON object with the keys
   `url`, `token` and `user`,
4. the default (`http://127.0.0.1:8787`; no token; no user, which is an error).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .ids import id_problem

DEFAULT_URL = "http://127.0.0.1:8787"


def home() -> Path:
    return Path(os.environ.get("ENTITY_MEMORY_HOME") or Path.home() / ".entity-memory")


def config_path() -> Path:
    explicit = os.environ.get("ENTITY_MEMORY_CONFIG")
    return Path(explicit) if explicit else home() / "config.json"


def read_config() -> dict[str, Any]:
    path = config_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} is not a JSON object")
    return data


class ConfigError(Exception):
    pass


def check_id(value: str, kind: str = "user") -> str:
    """`value` when the service would accept it as an id, else ConfigError saying why (the
    rule is `ids.id_problem`, shared with the client and the MCP server)."""
    problem = id_problem(value, kind)
    if problem is not None:
        raise ConfigError(problem)
    return value


@dataclass
class Settings:
    url: str
    token: str | None
    user: str | None


def resolve(url: str | None = None, token: str | None = None, user: str | None = None) -> Settings:
    """Flag, then environment, then config file, then default (see the module docstring)."""
    need_file = not (
        (url or os.environ.get("ENTITY_MEMORY_URL"))
        and (token or os.environ.get("ENTITY_MEMORY_TOKEN"))
        and (user or os.environ.get("ENTITY_MEMORY_USER"))
    )
    cfg = read_config() if need_file else {}

    def pick(flag: str | None, env: str, key: str) -> str | None:
        value = flag or os.environ.get(env) or cfg.get(key)
        return str(value) if value else None

    chosen = pick(user, "ENTITY_MEMORY_USER", "user")
    return Settings(
        url=pick(url, "ENTITY_MEMORY_URL", "url") or DEFAULT_URL,
        token=pick(token, "ENTITY_MEMORY_TOKEN", "token"),
        user=check_id(chosen) if chosen else None,
    )


def write_config(url: str | None, token: str | None, user: str | None) -> Path:
    """Save the settings for every later command (readable by the owner only: it may hold a
    token); keys already in the file and not given here are kept."""
    path = config_path()
    try:
        data = read_config()
    except ConfigError:
        data = {}
    data.update({k: v for k, v in {"url": url, "token": token, "user": user}.items() if v})
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2)
        fh.write("\n")
    os.chmod(path, 0o600)
    return path
