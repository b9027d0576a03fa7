"""FastAPI dependencies: the per-request bindings, store, ledger and caller.

`create_app` puts the host's `bind(env)` and the extractor factory on `app.state`; everything
a route needs is derived from them here, once per request (cached on `request.state`, which
the middleware shares), so KV and D1 calls are counted for the `X-KV-Operations` header.
They are `async def`: FastAPI runs a sync dependency in a thread pool; Pyodide has no threads.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Annotated

from fastapi import Depends, Path, Request

from entity_memory.domain.keys import validate_id, validate_type
from entity_memory.extraction.registry import ExtractorFactory
from entity_memory.http.errors import ApiError
from entity_memory.service.auth import Principal, TokenStore
from entity_memory.service.bindings import Bindings
from entity_memory.service.expiry import ReportExpired
from entity_memory.service.maintenance import expired_to_writer
from entity_memory.service.read_your_writes import WriterIndexKV
from entity_memory.service.stores import build_ledger, build_store
from entity_memory.service.writers import InProcessWriter, RemoteWriter, Writer
from entity_memory.service.writes import WriteContext
from entity_memory.settings import WriteAck
from entity_memory.storage.d1 import CountingD1
from entity_memory.storage.guard import guarded
from entity_memory.storage.kv import CountingKV, KVNamespace
from entity_memory.storage.ledger import Ledger
from entity_memory.storage.store import EntityStore

#: A test or replay may pin "now" with this header when the deployment allows it.
CLOCK_HEADER = "x-entity-memory-now"


def parse_clock(value: str) -> int:
    """Epoch ms, or an ISO 8601 time (`2026-05-26T15:00:00Z`)."""
    if value.strip().isdigit():
        return int(value)
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError as exc:
        raise ApiError(400, "invalid_clock", f"{CLOCK_HEADER} is not a time: {value!r}") from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


async def request_bindings(request: Request) -> Bindings:
    """The host's bindings with KV/D1 wrapped for failure mapping and counting."""
    cached: Bindings | None = getattr(request.state, "bindings", None)
    if cached is not None:
        return cached
    base: Bindings = request.app.state.bind(request.scope.get("env"))
    counter = request.state.kv_counter = CountingKV(guarded(base.kv, "KV"))
    db = None
    if base.db is not None:
        db = request.state.d1_counter = CountingD1(guarded(base.db, "D1"))
    # The Worker's own clock, for what must never follow a time a request states (budgets).
    request.state.worker_clock = clock = base.clock
    override = request.headers.get(CLOCK_HEADER)
    if override and base.settings.allow_clock_override:
        fixed = parse_clock(override)

        def clock() -> int:
            return fixed

    kv: KVNamespace = counter
    if base.writers is not None and base.settings.write_ack == WriteAck.COMMITTED:
        # The writer answers before KV's index holds a write: reads of it ask the writer.
        kv = request.state.index_asks = WriterIndexKV(counter, base.writers)
    cached = request.state.bindings = replace(base, kv=kv, db=db, clock=clock)
    return cached


BindingsDep = Annotated[Bindings, Depends(request_bindings)]


async def optional_ledger(b: BindingsDep) -> Ledger | None:
    return build_ledger(b)


async def ledger(b: BindingsDep) -> Ledger:
    if b.db is None:
        raise ApiError(503, "ledger_unavailable", "no D1 ledger is bound (HISTORY)")
    return Ledger(b.db)


async def store(
    b: BindingsDep, history: Annotated[Ledger | None, Depends(optional_ledger)]
) -> EntityStore:
    return build_store(b, history)


async def expired_report(b: BindingsDep) -> ReportExpired | None:
    """With a writer per user, the writer owns the index; what readers find expired goes
    there. None: this request drops them itself."""
    return None if b.writers is None else expired_to_writer(b)


async def extractor_factory(request: Request) -> ExtractorFactory:
    factory: ExtractorFactory = request.app.state.extractor_factory
    return factory


def pinned_now(request: Request, b: Bindings) -> int | None:
    """The time `X-Entity-Memory-Now` pins, where the deployment allows it."""
    override = request.headers.get(CLOCK_HEADER)
    if override and b.settings.allow_clock_override:
        return parse_clock(override)
    return None


async def admin_tokens(request: Request, b: BindingsDep) -> TokenStore:
    """The token store, for an admin caller only."""
    principal: Principal | None = getattr(request.state, "principal", None)
    if principal is None or principal.kind == "user":
        raise ApiError(403, "forbidden", "admin token required")
    if b.db is None:
        raise ApiError(503, "ledger_unavailable", "no D1 database is bound (HISTORY)")
    return TokenStore(b.db, b.settings.api_token)


async def user_id(user_id: Annotated[str, Path(description="whose memory this is")]) -> str:
    validate_id(user_id, "user")
    return user_id


UserId = Annotated[str, Depends(user_id)]


async def entity_ref(
    user_id: UserId,
    entity_type: Annotated[str, Path(description="campaign | metric | decision | ...")],
    entity_id: str,
) -> tuple[str, str]:
    """(type, id) of an entity path, validated after its user."""
    validate_type(entity_type)
    validate_id(entity_id, "entity")
    return entity_type, entity_id


StoreDep = Annotated[EntityStore, Depends(store)]
LedgerDep = Annotated[Ledger, Depends(ledger)]
OptionalLedgerDep = Annotated[Ledger | None, Depends(optional_ledger)]
AdminTokensDep = Annotated[TokenStore, Depends(admin_tokens)]
EntityRefDep = Annotated[tuple[str, str], Depends(entity_ref)]
ExpiredReportDep = Annotated[ReportExpired | None, Depends(expired_report)]


async def writer(
    request: Request,
    user_id: UserId,
    b: BindingsDep,
    factory: Annotated[ExtractorFactory, Depends(extractor_factory)],
) -> Writer:
    """The user's writer: every route that writes takes this, and only those do (which
    routes write is decided by who depends on this, see tests/unit/test_write_routes.py).
    Kept on `request.state` so the response can report what the call cost inside it.
    No store is built here: the write builds one where it runs (the user's writer, or this
    request without one)."""
    chosen: Writer
    if b.writers is None:
        chosen = InProcessWriter(WriteContext(build_ledger(b), b, factory))
    else:
        principal: Principal | None = getattr(request.state, "principal", None)
        token_id = None if principal is None else principal.token_id
        chosen = RemoteWriter(b.writers(user_id), now=pinned_now(request, b), token_id=token_id)
    request.state.writer = chosen
    return chosen


WriterDep = Annotated[Writer, Depends(writer)]
