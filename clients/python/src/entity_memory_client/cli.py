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
import hashlib
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
    entity_id = getattr(args, "id", None)  # get, delete, history
    if isinstance(entity_id, str):
        try:
            settings_mod.check_id(entity_id, "entity")
        except settings_mod.ConfigError as exc:
            raise UsageError(str(exc)) from exc
    return EntityMemory(cfg.url, cfg.token, user=cfg.user, **kw)


#: Options every subcommand takes, accepted before the subcommand too (`entity-memory --user
#: ann context ...`): moved after it, so the subcommand's own parser reads them.
GLOBAL_OPTIONS = ("--url", "--token", "--user")
GLOBAL_FLAGS = ("--json",)


def hoist_global_options(argv: list[str], commands: set[str]) -> list[str]:
    """argv with the global options found before the subcommand moved to just after it."""
    moved: list[str] = []
    rest = list(argv)
    i = 0
    while i < len(rest):
        arg = rest[i]
        if arg in commands:
            return rest[: i + 1] + moved + rest[i + 1 :]
        name = arg.split("=", 1)[0]
        if (name in GLOBAL_OPTIONS and "=" in arg) or arg in GLOBAL_FLAGS:
            moved.append(rest.pop(i))
        elif name in GLOBAL_OPTIONS and i + 1 < len(rest):
            moved += [rest.pop(i), rest.pop(i)]
        else:
            i += 1
    return list(argv)  # no subcommand: argparse says so


def _print_json(data: Any, out: TextIO = sys.stdout) -> None:
    json.dump(data, out, indent=2, ensure_ascii=False)
    out.write("\n")


def session_id_for(path: str, conv: transcript_mod.Conversation) -> str:
    """A file's session id: the transcript's own (Claude Code), else the file name's stem."""
    if path == "-":  # the same conversation piped twice is the same session
        fallback = "stdin-" + hashlib.sha256(_conversation_text(conv).encode()).hexdigest()[:16]
    else:
        fallback = Path(path).stem
    candidate = conv.session_id or fallback
    candidate = _SESSION_SAFE.sub("-", candidate).strip("-.") or "session"
    return candidate[:128]


def _conversation_text(conv: transcript_mod.Conversation) -> str:
    if conv.messages is not None:
        return json.dumps(conv.messages, ensure_ascii=False, sort_keys=True)
    return conv.transcript or ""


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


def _task(args: argparse.Namespace) -> str:
    task = args.task or " ".join(args.words or [])
    if not task.strip():
        raise UsageError('say what the session is about: entity-memory context "TASK"')
    return task


def score_lines(scores: list[dict[str, Any]]) -> list[str]:
    """One line an entity: its score and the numeric signals behind it. A flag is a word, not
    a number: `alwaysInjected` printed as "1.00" read as a signal that weighs in the score."""
    lines = []
    for s in scores:
        signals = [
            f"{k} {v:.2f}"
            for k, v in s.items()
            if isinstance(v, int | float) and not isinstance(v, bool) and k != "score"
        ]
        if s.get("alwaysInjected"):
            signals.append("always in context")
        score = s.get("score", 0.0)
        line = f"{score:5.2f}  {s.get('type', ''):10} {s.get('name', '')}"
        lines.append(f"{line}  ({', '.join(signals)})")
    return lines


def cmd_context(args: argparse.Namespace) -> int:
    with _client(args) as mem:
        result = mem.context(
            _task(args), limit=args.limit, max_tokens=args.max_tokens, explain=args.explain
        )
    if args.json:
        _print_json(result)
        return 0
    print(result["context"])
    if args.explain:
        print("\nranking (score: signals):")
        print("\n".join(score_lines(result.get("scores") or [])))
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    """The entities the context ranking puts first for a query, with their signals."""
    with _client(args) as mem:
        result = mem.context(_task(args), limit=args.limit, explain=True)
    if args.json:
        _print_json({"results": result.get("scores") or [], "entities": result["entities"]})
        return 0
    lines = score_lines(result.get("scores") or [])
    print("\n".join(lines) if lines else "nothing remembered matches")
    return 0


def cmd_add(args: argparse.Namespace) -> int:
    """Remember one typed entity as stated (the agent's or the user's own words)."""
    try:
        metadata = json.loads(args.metadata) if args.metadata else {}
    except ValueError as exc:
        raise UsageError(f"--metadata is not JSON: {exc}") from exc
    entity: dict[str, Any] = {
        "type": args.type,
        "name": args.name,
        "content": args.content or args.name,
        "importance": args.importance,
        "metadata": metadata,
    }
    if args.source:
        entity["source"] = args.source
    session = args.session or f"cli-{time.strftime('%Y%m%d')}"
    with _client(args) as mem:
        result = mem.upsert([entity], session)
    if args.json:
        _print_json(result)
        return 0
    for r in result.get("results", []):
        print(f"{r.get('status', '')} {r.get('type')}/{r.get('id')} v{r.get('version')}")
    return 0


def _extract_summary(path: str, session: str, result: dict[str, Any]) -> str:
    if "statusUrl" in result:  # queued or running: the service extracts it off the request
        job = result.get("job", {})
        return (
            f"{path}: session {session}: {job.get('state', 'queued')} as job {job.get('id')}"
            f" ({job.get('messages')} messages); `entity-memory job {job.get('id')}` shows it"
        )
    if result.get("degraded") and not result.get("results"):
        return f"{path}: session {session}: DEGRADED: {degraded_reason(result)}"
    if not result.get("processed", True):
        return f"{path}: session {session}: nothing new ({result.get('reason', 'unchanged')})"
    lines = [
        f"{path}: session {session}: {len(result.get('results', []))} entities "
        f"(extractor {result.get('extractor')}), {len(result.get('rejected', []))} rejected"
    ]
    if result.get("degraded"):
        lines.append(f"  DEGRADED: {degraded_reason(result)}")
    names = {(e.get("type"), e.get("id")): e.get("name") for e in result.get("entities", [])}
    for r in result.get("results", []):
        name = names.get((r.get("type"), r.get("id")), "")
        lines.append(f"  {r.get('status', ''):9} {r.get('type')}/{r.get('id')}  {name}")
    return "\n".join(lines)


def degraded_reason(result: dict[str, Any]) -> str:
    """Why an extraction fell short of the configured LLM (older servers: `fallbackReason`)."""
    reason = result.get("degradedReason") or result.get("fallbackReason") or "unknown reason"
    if result.get("pending"):
        reason += "; the session is pending and will be retried"
    return str(reason)


def cmd_extract(args: argparse.Namespace) -> int:
    files: list[str] = args.files
    if args.session and len(files) > 1:
        raise UsageError(
            "--session names one session: give one file (or none, to use each "
            "transcript's own session id or file name)"
        )
    if args.record_status and args.session:  # a hook's upload: one at a time per session
        from . import hooks

        try:
            with hooks.upload_lock(args.session):
                return _extract_files(args, files)
        except TimeoutError as exc:
            hooks.record_upload_status([{"error": {"code": "busy", "message": str(exc)}}])
            return 1
    return _extract_files(args, files)


def _extract_files(args: argparse.Namespace, files: list[str]) -> int:
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
                        wait=args.wait,
                    )
                    outcome = {"file": path, "session": session, "format": conv.kind, **result}
                    if conv.notes:
                        outcome["notes"] = conv.notes
                except EntityMemoryError as exc:
                    if len(files) == 1 and not args.record_status:
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
    if args.record_status:
        from . import hooks

        hooks.record_upload_status(outcomes)
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


def cmd_init(args: argparse.Namespace) -> int:
    path = settings_mod.write_config(url=args.url, token=args.token, user=args.user)
    print(
        f"saved to {path} (url {args.url}, user {args.user or '-'}, token "
        f"{'set' if args.token else 'none'})"
    )
    return 0


def cmd_jobs(args: argparse.Namespace) -> int:
    with _client(args) as mem:
        result = mem.job(args.id) if args.id else mem.jobs()
    if args.json:
        _print_json(result)
        return 0
    for job in [result] if args.id else result["jobs"]:
        print(job_line(job))
        if args.id and job.get("result"):
            print(_extract_summary("", job["sessionId"], job["result"]).lstrip(": "))
    return 0


def job_line(job: dict[str, Any]) -> str:
    """One job in a line: id, state, progress, session and any error."""
    line = (
        f"{job['id']}  {job['state']:7}  {job['chunksDone']}/{job['chunksTotal']} chunks"
        f"  session {job['sessionId']} ({job['messages']} messages)"
    )
    if job.get("error"):
        line += f"  {job['error']['code']}: {job['error']['message']}"
    return line


def cmd_doctor(args: argparse.Namespace) -> int:
    from . import doctor

    return doctor.run(args)


def cmd_hook(args: argparse.Namespace) -> int:
    from . import hooks

    code = hooks.run(args.event, args, hooks.process_start(STARTED))
    # Leave now: a request thread still waiting on a hung service must not delay the exit.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def cmd_install(args: argparse.Namespace) -> int:
    from . import install

    return install.run(args)


def cmd_mcp(args: argparse.Namespace) -> int:
    from . import mcp_server

    mcp_server.serve(url=args.url, token=args.token, user=args.user, verbose=args.verbose)
    return 0


# --- parser ------------------------------------------------------------------------------------


def _subcommands(parser: argparse.ArgumentParser) -> list[str]:
    for action in parser._actions:  # argparse has no public accessor for them
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices)
    return []


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--url", help="service URL (ENTITY_MEMORY_URL)")
    common.add_argument("--token", help="bearer token (ENTITY_MEMORY_TOKEN)")
    common.add_argument("--user", help="user id (ENTITY_MEMORY_USER, or the config file)")
    common.add_argument("--json", action="store_true", help="machine-readable JSON output")

    parser = argparse.ArgumentParser(
        prog="entity-memory",
        description="Long-term entity memory for AI agents.",
        epilog="--url, --token, --user and --json may come before or after the subcommand.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("context", parents=[common], help="print the <entity_memory> block")
    p.add_argument("words", nargs="*", metavar="TASK", help="what the new session is about")
    p.add_argument("--task", help="the task, as an option")
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--max-tokens", type=int, default=4000)
    p.add_argument("--explain", action="store_true", help="also show each entity's ranking")
    p.set_defaults(func=cmd_context)

    p = sub.add_parser("search", parents=[common], help="the remembered entities for a query")
    p.add_argument("words", nargs="+", metavar="QUERY")
    p.add_argument("--limit", type=int, default=10)
    p.set_defaults(func=cmd_search, task=None)

    p = sub.add_parser("add", parents=[common], help="remember one entity as stated")
    p.add_argument("type", choices=["campaign", "metric", "decision", "pain_point", "preference"])
    p.add_argument("name")
    p.add_argument("--content", help="a short summary (default: the name)")
    p.add_argument("--metadata", help="type-specific fields as JSON, e.g. '{\"budget\": 150}'")
    p.add_argument("--importance", type=float, default=0.7)
    p.add_argument("--source", help="the words this fact comes from (kept as provenance)")
    p.add_argument("--session", help="session id (default: cli-<today>)")
    p.set_defaults(func=cmd_add)

    p = sub.add_parser("init", help="save the service URL, token and user id for every command")
    p.add_argument("--url", default=settings_mod.DEFAULT_URL)
    p.add_argument("--token")
    p.add_argument("--user")
    p.set_defaults(func=cmd_init)

    p = sub.add_parser("doctor", parents=[common], help="check the service, token and hooks")
    p.add_argument("--dir", default=".", help="the project whose Claude Code hooks to check")
    p.set_defaults(func=cmd_doctor)

    p = sub.add_parser("extract", parents=[common], help="extract entities from transcripts")
    p.add_argument("files", nargs="+", metavar="FILE", help="transcript file(s), or - for stdin")
    p.add_argument("--session", help="session id (default: the transcript's, or the file name)")
    p.add_argument("--extractor", choices=["rules", "workers-ai", "openai"])
    p.add_argument("--quiet", action="store_true", help="no output unless an error")
    p.add_argument(
        "--wait",
        type=float,
        default=0,
        metavar="SECONDS",
        help="wait up to SECONDS for the result (default: queue the job and return)",
    )
    p.add_argument("--record-status", action="store_true", help=argparse.SUPPRESS)  # hooks
    p.set_defaults(func=cmd_extract)

    p = sub.add_parser("jobs", parents=[common], help="the user's extraction jobs")
    p.add_argument("id", nargs="?", help="one job: its state, progress and result")
    p.set_defaults(func=cmd_jobs)
    p = sub.add_parser("job", parents=[common], help="one extraction job (as `jobs ID`)")
    p.add_argument("id")
    p.set_defaults(func=cmd_jobs)

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
        help="<project>/.claude/settings.local.json, yours alone (default)",
    )
    scope.add_argument(
        "--global",
        dest="scope",
        action="store_const",
        const="global",
        help="~/.claude/settings.json, every project",
    )
    p.add_argument("--dir", default=".", help="the project directory (with --project)")
    p.add_argument("--url", help="service URL the hooks use")
    p.add_argument("--token", help="bearer token the hooks use")
    p.add_argument("--user", dest="memory_user", help="user id the hooks remember for")
    p.add_argument(
        "--command",
        dest="base_command",
        help="how hooks invoke the CLI (default: this installation's entity-memory)",
    )
    p.set_defaults(func=cmd_install, scope="project")

    p = sub.add_parser("mcp", parents=[common], help="run the MCP server on stdio")
    p.add_argument("--verbose", action="store_true", help="log every request to stderr")
    p.set_defaults(func=cmd_mcp)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    commands = set(_subcommands(parser))
    args = parser.parse_args(hoist_global_options(sys.argv[1:] if argv is None else argv, commands))
    try:
        return int(args.func(args) or 0)
    except UsageError as exc:
        print(f"entity-memory: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader left (`... | head`): not an error. Point stdout at /dev/null so the
        # interpreter's final flush does not fail again. (Before `Exception`, which it is.)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
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
