"""A stdio MCP server over the entity-memory service (official `mcp` Python SDK).

Run it as `entity-memory-mcp` or `entity-memory mcp` (`--url`, `--token`, `--user`, or the
usual environment / config file). Tools: `remember`, `recall`, `entities`, `history`,
`forget_entity`. Resources: `entity-memory://preferences`, `entity-memory://pain-points`.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
import uuid
from typing import Any, NoReturn

from mcp.server.mcpserver import MCPServer  # mcp 2.x (FastMCP in 1.x)
from mcp.server.mcpserver.exceptions import ToolError

from . import __version__
from . import settings as settings_mod
from .client import AsyncEntityMemory, EntityMemoryError

#: Seconds `remember` waits for an extraction before answering with its queued job: the
#: rules extractor is done well within it, a model's extraction goes on without the agent.
REMEMBER_WAIT_S = 5.0

INSTRUCTIONS = (
    "Long-term memory of the user's campaigns, metrics, decisions, pain points and "
    "preferences. Call `recall` with the task at the start of a piece of work; call "
    "`remember` with the conversation (or explicit entities) when something worth keeping "
    "was said or decided."
)


def why_nothing_stored(result: dict[str, Any]) -> str:
    """The reason a `remember` stored nothing, in words the agent can act on."""
    if result.get("processed") is False:
        return (
            result.get("reason")
            or "this session was already processed with the same messages: nothing new to read"
            " (use another session_id for a new conversation)"
        )
    reasons = []
    for entry in result.get("rejected") or []:
        item = entry.get("item") if isinstance(entry, dict) else None
        name = item.get("name") if isinstance(item, dict) else None
        why = entry.get("reason", "rejected") if isinstance(entry, dict) else "rejected"
        reasons.append(f"{name}: {why}" if name else str(why))
    if reasons:
        return "every candidate was rejected: " + "; ".join(reasons[:10])
    if result.get("degraded"):
        return "extraction degraded: " + str(result.get("degradedReason") or "the extractor failed")
    extractor = result.get("extractor") or "the extractor"
    return (
        f"{extractor} found no campaign, metric, decision, pain point or preference in these"
        " messages; give `entities` to store facts as they are"
    )


#: What an agent reads of a listed entity; the index's ranking internals (vectors, keyword
#: lists, links still to resolve) are the service's business, and only cost the agent tokens.
LISTED_FIELDS = ("id", "type", "name", "importance", "updatedAt", "value")


def listed_entity(entry: dict[str, Any]) -> dict[str, Any]:
    return {key: entry[key] for key in LISTED_FIELDS if entry.get(key) is not None}


def _fail(exc: EntityMemoryError) -> NoReturn:
    """An `isError` tool result carrying the API's error code, status and details (e.g. which
    field failed validation), so the model can correct its call."""
    error = {"code": exc.code, "message": exc.message, "status": exc.status}
    if exc.details is not None:
        error["details"] = exc.details
    raise ToolError(json.dumps({"error": error}, ensure_ascii=False)) from exc


def process_session_id() -> str:
    """One session per server process: the `remember` calls of one agent session land in one
    ledger session (a re-sent fact is then recognised instead of recorded again)."""
    return f"mcp-{time.strftime('%Y%m%d')}-{uuid.uuid4().hex[:12]}"


def build_server(url: str | None = None, token: str | None = None, user: str | None = None) -> Any:
    cfg = settings_mod.resolve(url, token, user)
    if not cfg.user:
        raise SystemExit(
            "entity-memory-mcp: no user id: pass --user, set ENTITY_MEMORY_USER, or put "
            f'"user" in {settings_mod.config_path()}'
        )

    def client() -> AsyncEntityMemory:
        return AsyncEntityMemory(cfg.url, cfg.token, user=cfg.user)

    server = MCPServer("entity-memory", instructions=INSTRUCTIONS, version=__version__)
    default_session = process_session_id()

    @server.tool()
    async def remember(
        messages: list[dict[str, str]] | None = None,
        transcript: str | None = None,
        entities: list[dict[str, Any]] | None = None,
        session_id: str | None = None,
    ) -> dict[str, Any]:
        """Store what a conversation taught about the user.

        Give `messages` (a list of {"role": "user"|"assistant", "content": "..."}) or a plain
        `transcript` to have the service extract entities; or give `entities` (each with type
        campaign|metric|decision|pain_point|preference, name, content, importance 0..1,
        metadata, and optionally `source`: the words the fact comes from, kept as its
        provenance) to upsert them as they are. `session_id` names the conversation (re-sending
        the same session changes nothing); by default every call of this server process uses
        one session.
        """
        session = session_id or default_session
        async with client() as mem:
            try:
                if entities:
                    result = await mem.upsert(entities, session)
                elif messages or transcript:
                    result = await mem.extract(
                        session, messages, transcript=transcript, wait=REMEMBER_WAIT_S
                    )
                else:
                    raise ToolError(
                        json.dumps({"error": {"code": "empty", "message": "nothing to remember"}})
                    )
            except EntityMemoryError as exc:
                _fail(exc)
        stored = [
            {"type": e["type"], "id": e["id"], "name": e["name"], "version": e["version"]}
            for e in result.get("entities", [])
        ]
        out: dict[str, Any] = {
            "session_id": session,
            "stored": stored,
            **{k: result[k] for k in ("processed", "reason", "rejected") if k in result},
        }
        if "statusUrl" in result:  # still extracting: it lands without this call waiting
            out["job"] = result["job"]
            out["queued"] = (
                "the service is still extracting this conversation; what it stores shows in"
                " `recall` once the job is done"
            )
        elif not stored:
            out["why_nothing_stored"] = why_nothing_stored(result)
        return out

    @server.tool()
    async def recall(task: str, limit: int = 20, max_tokens: int = 3000) -> str:
        """The `<entity_memory>` block of what is remembered that is relevant to `task`
        (preferences and pain points are always included)."""
        async with client() as mem:
            try:
                result = await mem.context(task, limit=limit, max_tokens=max_tokens)
            except EntityMemoryError as exc:
                _fail(exc)
        return result["context"]

    @server.tool()
    async def entities(type: str | None = None) -> dict[str, Any]:
        """List the remembered entities (id, type, name, importance, updatedAt and the value
        in a few words), newest first, optionally of one type: campaign, metric, decision,
        pain_point or preference."""
        async with client() as mem:
            try:
                listed = await mem.list(type, values=True)
            except EntityMemoryError as exc:
                _fail(exc)
        rows = [listed_entity(e) for e in listed.get("entities", [])]
        return {"entities": rows, "count": len(rows)}

    @server.tool()
    async def history(type: str, id: str, limit: int = 20) -> dict[str, Any]:
        """Every recorded version of one entity, newest first, with what changed."""
        async with client() as mem:
            try:
                return await mem.history(type, id, limit=limit)
            except EntityMemoryError as exc:
                _fail(exc)

    @server.tool()
    async def forget_entity(type: str, id: str) -> dict[str, Any]:
        """Delete one remembered entity (e.g. when the user says it is wrong or obsolete)."""
        async with client() as mem:
            try:
                return await mem.delete(type, id)
            except EntityMemoryError as exc:
                _fail(exc)

    async def _of_type(entity_type: str) -> str:
        async with client() as mem:
            listed = await mem.list(entity_type)
            docs = []
            for entry in listed["entities"][:20]:
                try:
                    docs.append(await mem.get(entity_type, entry["id"]))
                except EntityMemoryError:
                    continue
        return json.dumps(docs, ensure_ascii=False, indent=2)

    @server.resource(
        "entity-memory://preferences",
        name="preferences",
        description="The user's remembered preferences",
        mime_type="application/json",
    )
    async def preferences() -> str:
        return await _of_type("preference")

    @server.resource(
        "entity-memory://pain-points",
        name="pain-points",
        description="The user's recurring pain points",
        mime_type="application/json",
    )
    async def pain_points() -> str:
        return await _of_type("pain_point")

    return server


#: Loggers that would otherwise write a line per HTTP request to stderr.
_CHATTY_LOGGERS = ("httpx", "httpcore", "mcp")


def serve(
    url: str | None = None,
    token: str | None = None,
    user: str | None = None,
    verbose: bool = False,
) -> None:
    """Run on stdio; quiet unless `verbose` (stderr is the MCP client's log, not ours)."""
    for name in _CHATTY_LOGGERS:
        logging.getLogger(name).setLevel(logging.DEBUG if verbose else logging.WARNING)
    build_server(url, token, user).run("stdio")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="entity-memory-mcp", description=__doc__)
    parser.add_argument("--url")
    parser.add_argument("--token")
    parser.add_argument("--user")
    parser.add_argument("--verbose", action="store_true", help="log every request to stderr")
    args = parser.parse_args(argv)
    serve(args.url, args.token, args.user, verbose=args.verbose)


if __name__ == "__main__":
    main()
