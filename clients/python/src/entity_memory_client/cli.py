"""`entity-memory`: the command line over the client.

    entity-memory context --user alice --task "plan next week's budget"
    entity-memory extract --user alice --session s1 transcript.jsonl
    entity-memory entities --user alice --type preference --json
    entity-memory forget --user alice --yes

The user id comes from `--user`, else `ENTITY_MEMORY_USER`, else the config file's `user`
(see `entity_memory_client.settings`). Exit codes: 0 ok, 1 API or connection error, 2 usage.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from . import settings as settings_mod
from . import transcript as transcript_mod

#: When this process started running our code: the hooks' time budget counts from here.
STARTED = time.monotonic()
_SESSION_SAFE = re.compile(r"[^A-Za-z0-9._@+-]+")


class UsageError(Exception):
    pass


def _client(args: argparse.Namespace, need_user: bool = True, **kw: Any) -> Any:
    from .client import EntityMemory

    try:
        cfg = settings_mod.resolve(args.url, args.token, args.user)
    except settings_mod.ConfigError as exc:
        raise UsageError(str(exc)) from exc
    if need_user and not cfg.user:
        raise UsageError(
            'no user id: pass --user, set ENTITY_MEMORY_USER, or put "user" in '
            f"{settings_mod.config_path()}"
        )
    return EntityMemory(cfg.url, cfg.token, user=cfg.user, **kw)


def _print_json(data: Any, out: TextIO = sys.stdout) -> None:
    json.dump(data, out, indent=2, ensure_ascii=False)
    out.write("\n")


def session_id_for(path: str, conv: transcript_mod.Conversation) -> str:
    """A file's session id: the transcript's own (Claude Code), else the file name's stem."""
    fallback = Path(path).stem if path != "-" else f"stdin-{int(time.time())}"
    candidate = conv.session_id or fallback
    candidate = _SESSION_SAFE.sub("-", candidate).strip("-.") or "session"
    return candidate[:128]


def read_input(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    return Path(path).read_text(encoding="utf-8", errors="replace")


class Progress:
    """A one-line progress bar on stderr (plain lines when stderr is not a terminal)."""

    def __init__(self, total: int, stream: TextIO = sys.stderr, width: int = 30) -> None:
        self.total, self.stream, self.width, self.done = total, stream, width, 0
        self.tty = stream.isatty()

    def step(self, label: str) -> None:
        self.done += 1
        filled = int(self.width * self.done / max(1, self.total))
        bar = "#" * filled + "-" * (self.width - filled)
        line = f"[{bar}] {self.done}/{self.total} {label}"
        if self.tty:
            self.stream.write("\r\x1b[2K" + line[:200])
            if self.done == self.total:
                self.stream.write("\n")
        else:
            self.stream.write(line + "\n")
        self.stream.flush()


# --- commands ----------------------------------------------------------------------------------


def cmd_context(args: argparse.Namespace) -> int:
    with _client(args) as mem:
        result = mem.context(
            args.task, limit=args.limit, max_tokens=args.max_tokens, explain=args.explain
        )
    if args.json:
        _print_json(result)
    else:
        print(result["context"])
    return 0


def _extract_summary(path: str, session: str, result: dict[str, Any]) -> str:
    if not result.get("processed", True):
        return f"{path}: session {session}: nothing new ({result.get('reason', 'unchanged')})"
    lines = [
        f"{path}: session {session}: {len(result.get('results', []))} entities "
        f"(extractor {result.get('extractor')}), {len(result.get('rejected', []))} rejected"
    ]
    names = {(e.get("type"), e.get("id")): e.get("name") for e in result.get("entities", [])}
    for r in result.get("results", []):
        name = names.get((r.get("type"), r.get("id")), "")
        lines.append(f"  {r.get('status', ''):9} {r.get('type')}/{r.get('id')}  {name}")
    return "\n".join(lines)


def cmd_extract(args: argparse.Namespace) -> int:
    files: list[str] = args.files
    if args.session and len(files) > 1:
        raise UsageError(
            "--session names one session: give one file (or none, to use each "
            "transcript's own session id or file name)"
        )
    with _client(args) as mem:
        progress = Progress(len(files)) if len(files) > 1 and not args.quiet else None
        outcomes: list[dict[str, Any]] = []
        failed = 0
        for path in files:
            try:
                conv = transcript_mod.parse(read_input(path))
            except (OSError, ValueError) as exc:
                print(f"{path}: cannot read: {exc}", file=sys.stderr)
                failed += 1
                error = {"code": "unreadable", "message": str(exc)}
                outcomes.append({"file": path, "error": error})
                continue
            session = args.session or session_id_for(path, conv)
            if conv.empty:
                outcome: dict[str, Any] = {
                    "file": path,
                    "session": session,
                    "skipped": "no user or assistant text",
                }
            else:
                from .client import EntityMemoryError

                try:
                    result = mem.extract(
                        session,
                        conv.messages,
                        transcript=conv.transcript,
                        extractor=args.extractor,
                    )
                    outcome = {"file": path, "session": session, "format": conv.kind, **result}
                    if conv.notes:
                        outcome["notes"] = conv.notes
                except EntityMemoryError as exc:
                    if len(files) == 1:
                        raise
                    failed += 1
                    print(f"{path}: {exc}", file=sys.stderr)
                    outcome = {
                        "file": path,
                        "session": session,
                        "error": {"code": exc.code, "message": exc.message},
                    }
            outcomes.append(outcome)
            if progress:
                progress.step(Path(path).name)
            elif not args.json and not args.quiet:
                if "skipped" in outcome:
                    print(f"{path}: skipped: {outcome['skipped']}")
                elif "error" not in outcome:
                    print(_extract_summary(path, session, outcome))
    if args.json:
        _print_json(outcomes[0] if len(outcomes) == 1 else {"files": outcomes})
    elif progress and not args.quiet:
        for o in outcomes:
            if "error" not in o and "skipped" not in o:
                print(_extract_summary(o["file"], o["session"], o))
    return 1 if failed else 0


def cmd_entities(args: argparse.Namespace) -> int:
    with _client(args) as mem:
        result = mem.list(args.type)
    if args.json:
        _print_json(result)
        return 0
    for e in result["entities"]:
        print(f"{e['type']:11} {e['id']:40} {e['importance']:.2f}  {e['name']}")
    print(f"{result['count']} entities", file=sys.stderr)
    return 0


def cmd_get(args: argparse.Namespace) -> int:
    with _client(args) as mem:
        entity = mem.get(args.type, args.id)
    if args.json:
        _print_json(entity)
    else:
        print(f"{entity['type']}/{entity['id']}  v{entity.get('version')}  {entity['name']}")
        print(entity.get("content", ""))
        if entity.get("metadata"):
            print(json.dumps(entity["metadata"], ensure_ascii=False))
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    with _client(args) as mem:
        result = mem.delete(args.type, args.id)
    if args.json:
        _print_json(result)
    else:
        print(f"deleted {args.type}/{args.id}")
    return 0


def _when(ms: Any) -> str:
    if not isinstance(ms, int | float):
        return "?"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ms / 1000))


def cmd_history(args: argparse.Namespace) -> int:
    with _client(args) as mem:
        result = mem.history(args.type, args.id, limit=args.limit)
    if args.json:
        _print_json(result)
        return 0
    print(f"{result['type']}/{result['id']}")
    for v in result["versions"]:
        changed = v.get("changes") or {}
        fields = ", ".join(changed) if isinstance(changed, dict | list) else str(changed)
        print(
            f"  v{v.get('version')}  {_when(v.get('recordedAt'))}  {v.get('changeKind', '')}"
            f"  {fields}  (session {v.get('sessionId')})"
        )
    return 0


def cmd_changes(args: argparse.Namespace) -> int:
    with _client(args) as mem:
        result = mem.changes(args.since, limit=args.limit)
    if args.json:
        _print_json(result)
        return 0
    for e in result.get("entities", []):
        kinds = ", ".join(str(c.get("changeKind")) for c in e.get("changes", []))
        print(f"{e.get('type')}/{e.get('id')}  {e.get('name') or ''}  [{kinds}]")
    print(f"{result.get('count', 0)} entities changed since {args.since}", file=sys.stderr)
    return 0


def cmd_trends(args: argparse.Namespace) -> int:
    with _client(args) as mem:
        result = mem.trends()
    if args.json:
        _print_json(result)
        return 0
    print("metrics:")
    for m in result.get("metrics", []):
        print("  " + json.dumps(m, ensure_ascii=False))
    print("pain points:")
    for p in result.get("painPoints", []):
        print("  " + json.dumps(p, ensure_ascii=False))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    with _client(args) as mem:
        result = mem.export()
    if args.output and args.output != "-":
        Path(args.output).write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
        print(
            f"exported {len(result.get('entities', []))} entities to {args.output}", file=sys.stderr
        )
    else:
        _print_json(result)
    return 0


def cmd_reindex(args: argparse.Namespace) -> int:
    with _client(args) as mem:
        result = mem.reindex()
    _print_json(result) if args.json else print(json.dumps(result))
    return 0


def cmd_forget(args: argparse.Namespace) -> int:
    cfg = _client(args)
    user = cfg.user
    cfg.close()
    if not args.yes:
        if not sys.stdin.isatty():
            print(
                f"refusing to forget user {user!r} without confirmation: stdin is not a "
                "terminal; pass --yes",
                file=sys.stderr,
            )
            return 2
        answer = input(f"Erase ALL memory of user {user!r} (entities and history)? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("aborted", file=sys.stderr)
            return 1
    with _client(args) as mem:
        result = mem.forget_user()
    if args.json:
        _print_json({"user": user, **result})
    else:
        print(f"forgot user {user}: {json.dumps(result)}")
    return 0


def cmd_hook(args: argparse.Namespace) -> int:
    from . import hooks

    code = hooks.run(args.event, args, STARTED)
    # Leave now: a request thread still waiting on a hung service must not delay the exit.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def cmd_install(args: argparse.Namespace) -> int:
    from . import install

    return install.run(args)


def cmd_mcp(args: argparse.Namespace) -> int:
    from . import mcp_server

    mcp_server.serve(url=args.url, token=args.token, user=args.user)
    return 0


# --- parser ------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--url", help="service URL (ENTITY_MEMORY_URL)")
    common.add_argument("--token", help="bearer token (ENTITY_MEMORY_TOKEN)")
    common.add_argument("--user", help="user id (ENTITY_MEMORY_USER, or the config file)")
    common.add_argument("--json", action="store_true", help="machine-readable JSON output")

    parser = argparse.ArgumentParser(
        prog="entity-memory", description="Long-term entity memory for AI agents."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("context", parents=[common], help="print the <entity_memory> block")
    p.add_argument("--task", required=True, help="what the new session is about")
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--max-tokens", type=int, default=4000)
    p.add_argument("--explain", action="store_true", help="include ranking scores (with --json)")
    p.set_defaults(func=cmd_context)

    p = sub.add_parser("extract", parents=[common], help="extract entities from transcripts")
    p.add_argument("files", nargs="+", metavar="FILE", help="transcript file(s), or - for stdin")
    p.add_argument("--session", help="session id (default: the transcript's, or the file name)")
    p.add_argument("--extractor", choices=["rules", "workers-ai", "openai"])
    p.add_argument("--quiet", action="store_true", help="no output unless an error")
    p.set_defaults(func=cmd_extract)

    p = sub.add_parser("entities", parents=[common], help="list the user's entities")
    p.add_argument("--type", choices=["campaign", "metric", "decision", "pain_point", "preference"])
    p.set_defaults(func=cmd_entities)

    for name, func, text in (
        ("get", cmd_get, "show one entity"),
        ("delete", cmd_delete, "delete one entity"),
        ("history", cmd_history, "every recorded version of one entity"),
    ):
        p = sub.add_parser(name, parents=[common], help=text)
        p.add_argument("type")
        p.add_argument("id")
        if name == "history":
            p.add_argument("--limit", type=int)
        p.set_defaults(func=func)

    p = sub.add_parser("changes", parents=[common], help="what changed since a time")
    p.add_argument("--since", type=int, default=0, help="epoch milliseconds")
    p.add_argument("--limit", type=int)
    p.set_defaults(func=cmd_changes)

    p = sub.add_parser("trends", parents=[common], help="metric and pain-point trends")
    p.set_defaults(func=cmd_trends)

    p = sub.add_parser("export", parents=[common], help="everything of the user, as JSON")
    p.add_argument("--output", "-o", help="write to a file instead of stdout")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("reindex", parents=[common], help="rebuild the user's index")
    p.set_defaults(func=cmd_reindex)

    p = sub.add_parser("forget", parents=[common], help="erase ALL memory of the user")
    p.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    p.set_defaults(func=cmd_forget)

    p = sub.add_parser("hook", parents=[common], help="Claude Code hook (reads JSON on stdin)")
    p.add_argument("event", choices=["session-start", "session-end", "pre-compact", "stop"])
    p.set_defaults(func=cmd_hook)

    p = sub.add_parser("install", help="install integrations")
    p.add_argument("target", choices=["claude-code"])
    scope = p.add_mutually_exclusive_group()
    scope.add_argument(
        "--project",
        dest="scope",
        action="store_const",
        const="project",
        help="<project>/.claude/settings.json (default)",
    )
    scope.add_argument(
        "--user", dest="scope", action="store_const", const="user", help="~/.claude/settings.json"
    )
    p.add_argument("--dir", default=".", help="the project directory (with --project)")
    p.add_argument("--memory-user", help="user id to write into the hook commands")
    p.add_argument(
        "--command",
        dest="base_command",
        help="how hooks invoke the CLI (default: this installation's entity-memory)",
    )
    p.set_defaults(func=cmd_install, scope="project")

    p = sub.add_parser("mcp", parents=[common], help="run the MCP server on stdio")
    p.set_defaults(func=cmd_mcp)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except UsageError as exc:
        print(f"entity-memory: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        client = sys.modules.get(f"{__package__}.client")
        if client is None or not isinstance(exc, client.EntityMemoryError):
            raise
        if getattr(args, "json", False):
            _print_json(
                {"error": {"code": exc.code, "message": exc.message, "status": exc.status}},
                sys.stderr,
            )
        else:
            print(f"entity-memory: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
