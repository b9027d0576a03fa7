"""The HTTP API agents call: FastAPI, served in the Worker through the SDK's ASGI bridge.

Every error is `{"error": {"code", "message"}}` with a stable machine-readable code, so an
agent can branch on it. Routes are `async def`: Pyodide has no threads for sync routes.
Each response carries `X-KV-Operations`, the KV calls it cost, because KV is billed per call.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from entity_memory import __version__
from entity_memory.domain import safe_json
from entity_memory.domain.context import assemble_entity_context
from entity_memory.domain.keys import (
    ENTITY_TYPES,
    InvalidId,
    InvalidType,
    validate_id,
    validate_type,
)
from entity_memory.domain.models import EntityInput
from entity_memory.domain.trends import metric_trends, pain_point_trends
from entity_memory.extraction.base import Message
from entity_memory.extraction.registry import ExtractorFactory, build_extractor
from entity_memory.http.web import router as web_router
from entity_memory.service.auth import TokenStore, authenticate
from entity_memory.service.extract_session import (
    MAX_MESSAGES,
    ExtractionRequestError,
    SessionExtraction,
    transcript_to_messages,
)
from entity_memory.service.settings import Bindings
from entity_memory.storage.d1 import CountingD1
from entity_memory.storage.guard import StorageUnavailable, guarded
from entity_memory.storage.kv import CountingKV
from entity_memory.storage.ledger import Ledger
from entity_memory.storage.store import CorruptRecord, EntityStore

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = 1024 * 1024
MAX_BATCH = 100
RATE_LIMIT_PERIOD_S = 60  # the `[[ratelimits]]` period in wrangler.toml
KV_OPS_HEADER = "X-KV-Operations"
D1_OPS_HEADER = "X-D1-Statements"


class ApiError(Exception):
    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: Any | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        self.headers = headers


def error_response(
    status: int,
    code: str,
    message: str,
    details: Any | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    body: dict[str, Any] = {"code": code, "message": message}
    if details is not None:
        body["details"] = details
    return JSONResponse({"error": body}, status_code=status, headers=headers)


# --- request bodies ----------------------------------------------------------------------------


class StrictBody(BaseModel):
    model_config = ConfigDict(extra="forbid")


class UpsertBody(StrictBody):
    session_id: str = Field(description="the session these entities were learnt in")
    entities: list[EntityInput] = Field(max_length=MAX_BATCH)


#: HTTP status of each extraction error code.
EXTRACTION_ERROR_STATUS = {
    "empty_conversation": 422,
    "too_large": 413,
    "invalid_extractor": 400,
    "extractor_unavailable": 400,
    "extractor_misconfigured": 503,
}


class ExtractBody(StrictBody):
    messages: list[Message] | None = Field(
        default=None, description=f"at most {MAX_MESSAGES} (more is 413 too_large)"
    )
    transcript: str | None = Field(default=None, description="plain text, `user:` lines")
    extractor: str | None = Field(default=None, description="rules | workers-ai | openai")


class TokenBody(StrictBody):
    user_id: str = Field(description="the only user this token may access")
    label: str | None = Field(default=None, max_length=200)


class ContextBody(StrictBody):
    task: str = Field(max_length=20_000, description="what the new session is about")
    limit: int = Field(default=20, ge=1, le=100)
    max_tokens: int = Field(default=4000, ge=1, le=100_000)
    explain: bool = False


# --- helpers -----------------------------------------------------------------------------------


def _check_path(user_id: str, entity_type: str | None = None, entity_id: str | None = None) -> None:
    validate_id(user_id, "user")
    if entity_type is not None:
        validate_type(entity_type)
    if entity_id is not None:
        validate_id(entity_id, "entity")


def _pydantic_details(exc: ValidationError | RequestValidationError) -> list[dict[str, Any]]:
    """Pydantic's errors without echoing whole inputs back (they may be large or sensitive)."""
    details = []
    for err in exc.errors():
        loc = [p for p in err.get("loc", ()) if p != "body"]
        details.append({"loc": loc, "msg": err.get("msg"), "type": err.get("type")})
    return details


async def _read_json(request: Request) -> Any:
    body = await request.body()
    if len(body) > MAX_BODY_BYTES:
        raise ApiError(413, "too_large", f"request body over {MAX_BODY_BYTES} bytes")
    try:
        return safe_json.loads(body or b"null")
    except safe_json.JsonTooDeep as exc:
        raise ApiError(400, "json_too_deep", str(exc)) from exc
    except ValueError as exc:
        raise ApiError(400, "invalid_json", f"request body is not JSON: {exc}") from exc


async def _body_problem(request: Request) -> JSONResponse | None:
    """Refuse a body before any route parses it: over the size cap (declared or, for chunked
    bodies, as read) or nested deeper than the parser can survive."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        return error_response(413, "too_large", f"request body over {MAX_BODY_BYTES} bytes")
    if request.method not in ("POST", "PUT", "PATCH", "DELETE"):
        return None
    body = await request.body()  # Starlette caches it for the route
    if len(body) > MAX_BODY_BYTES:
        return error_response(413, "too_large", f"request body over {MAX_BODY_BYTES} bytes")
    content_type = request.headers.get("content-type", "")
    if content_type and "json" not in content_type:
        return None  # a plain-text transcript is not parsed as JSON
    try:
        safe_json.check_depth(body)
    except safe_json.JsonTooDeep as exc:
        return error_response(400, "json_too_deep", str(exc))
    return None


CLOCK_HEADER = "x-entity-memory-now"


def _parse_clock(value: str) -> int:
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


def create_app(
    bind: Callable[[Any], Bindings], extractor_factory: ExtractorFactory = build_extractor
) -> FastAPI:
    """Build the app; `bind(env)` turns the host's env (Worker env, or None) into Bindings."""
    app = FastAPI(
        title="entity-memory",
        version=__version__,
        description="Long-term memory of named, typed entities for AI agents.",
    )

    def bindings(request: Request) -> Bindings:
        cached = getattr(request.state, "bindings", None)
        if cached is None:
            base = bind(request.scope.get("env"))
            counter = CountingKV(guarded(base.kv, "KV"))
            request.state.kv_counter = counter
            db = None
            if base.db is not None:
                db = request.state.d1_counter = CountingD1(guarded(base.db, "D1"))
            clock = base.clock
            override = request.headers.get(CLOCK_HEADER)
            if override and base.settings.allow_clock_override:
                fixed = _parse_clock(override)

                def clock() -> int:
                    return fixed

            cached = replace(base, kv=counter, db=db, clock=clock)
            request.state.bindings = cached
        return cached

    def ledger_for(request: Request) -> Ledger | None:
        db = bindings(request).db
        return None if db is None else Ledger(db)

    def require_ledger(request: Request) -> Ledger:
        ledger = ledger_for(request)
        if ledger is None:
            raise ApiError(503, "ledger_unavailable", "no D1 ledger is bound (HISTORY)")
        return ledger

    def store_for(request: Request) -> EntityStore:
        b = bindings(request)
        return EntityStore(b.kv, b.settings, b.clock, ledger_for(request))

    # --- middleware: size limit, auth, KV accounting --------------------------------------------

    @app.middleware("http")
    async def guard(request: Request, call_next: Callable[[Request], Awaitable[Any]]) -> Any:
        problem = await _body_problem(request)
        if problem is not None:
            return problem
        path = request.url.path
        if path.startswith("/v1/") or path == "/v1":
            try:
                b = bindings(request)
                tokens = None if b.db is None else TokenStore(b.db)
                principal = await authenticate(
                    request.headers.get("authorization"), b.settings.api_token, tokens
                )
                if principal is None:
                    return error_response(
                        401,
                        "unauthorized",
                        "missing, wrong or revoked bearer token",
                        headers={"WWW-Authenticate": 'Bearer realm="entity-memory"'},
                    )
                # The encoded path: "ann%2Fbob" must not pass as a path under "ann/".
                raw = request.scope.get("raw_path")
                if not principal.may_access(raw.decode("latin-1") if raw else path):
                    return error_response(403, "forbidden", "this token is for another user")
                key = principal.rate_key
                if key is not None and b.rate_limit is not None and not await b.rate_limit(key):
                    return error_response(
                        429,
                        "rate_limited",
                        "too many requests for this token; retry later",
                        headers={"Retry-After": str(RATE_LIMIT_PERIOD_S)},
                    )
            except ApiError as exc:
                return error_response(exc.status, exc.code, exc.message)
            except Exception:
                logger.exception("could not authenticate")
                return error_response(
                    503,
                    "storage_unavailable",
                    "could not check the token; retry",
                    headers={"Retry-After": "1"},
                )
            request.state.principal = principal
        response = await call_next(request)
        counter = getattr(request.state, "kv_counter", None)
        if counter is not None:
            response.headers[KV_OPS_HEADER] = counter.summary() or "none"
        d1 = getattr(request.state, "d1_counter", None)
        if d1 is not None:
            response.headers[D1_OPS_HEADER] = f"calls={d1.calls},statements={d1.statements}"
        return response

    # --- error mapping ---------------------------------------------------------------------------

    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.code, exc.message, exc.details, exc.headers)

    @app.exception_handler(ExtractionRequestError)
    async def _extraction_error(_: Request, exc: ExtractionRequestError) -> JSONResponse:
        return error_response(EXTRACTION_ERROR_STATUS.get(exc.code, 400), exc.code, exc.message)

    @app.exception_handler(StorageUnavailable)
    async def _storage(_: Request, exc: StorageUnavailable) -> JSONResponse:
        logger.warning("storage unavailable: %s", exc)
        return error_response(
            503,
            "storage_unavailable",
            "storage failed; retry the request",
            headers={"Retry-After": "1"},
        )

    @app.exception_handler(CorruptRecord)
    async def _corrupt(_: Request, exc: CorruptRecord) -> JSONResponse:
        logger.error("corrupt record: %s", exc)
        return error_response(
            409, "corrupt_record", "this stored entity does not validate; PUT or DELETE it"
        )

    @app.exception_handler(InvalidId)
    async def _invalid_id(_: Request, exc: InvalidId) -> JSONResponse:
        return error_response(400, "invalid_id", str(exc), {"kind": exc.kind})

    @app.exception_handler(InvalidType)
    async def _invalid_type(_: Request, exc: InvalidType) -> JSONResponse:
        return error_response(400, "invalid_type", str(exc), {"allowed": list(ENTITY_TYPES)})

    @app.exception_handler(RequestValidationError)
    async def _invalid_request(_: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(
            422, "invalid_request", "request does not validate", _pydantic_details(exc)
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return error_response(exc.status_code, code, str(exc.detail))

    @app.exception_handler(Exception)
    async def _internal(_: Request, exc: Exception) -> JSONResponse:
        logger.exception("unhandled error", exc_info=exc)
        return error_response(500, "internal", "internal error")

    # --- routes ----------------------------------------------------------------------------------

    app.include_router(web_router)

    @app.get("/healthz", tags=["meta"])
    async def healthz() -> dict[str, str]:
        return {"status": "ok", "version": __version__}

    @app.put(
        "/v1/users/{user_id}/entities",
        tags=["entities"],
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {
                    "application/json": {
                        "schema": UpsertBody.model_json_schema(
                            ref_template="#/components/schemas/{model}"
                        )
                    }
                },
            }
        },
    )
    async def upsert_entities(user_id: str, request: Request) -> dict[str, Any]:
        """Upsert a batch (at most 100) of entities; a bad item rejects the whole batch."""
        _check_path(user_id)
        raw = await _read_json(request)
        if isinstance(raw, dict) and isinstance(raw.get("entities"), list):
            if len(raw["entities"]) > MAX_BATCH:
                raise ApiError(413, "too_large", f"at most {MAX_BATCH} entities per batch")
            for i, item in enumerate(raw["entities"]):
                if isinstance(item, dict) and "id" in item and item["id"] is not None:
                    try:
                        validate_id(item["id"], "entity")
                    except InvalidId as exc:
                        raise ApiError(
                            400,
                            "invalid_id",
                            f"entities[{i}]: {exc}",
                            {"kind": "entity", "index": i},
                        ) from exc
        try:
            body = UpsertBody.model_validate(raw)
        except ValidationError as exc:
            raise ApiError(
                422, "invalid_entity", "entities do not validate", _pydantic_details(exc)
            ) from exc
        validate_id(body.session_id, "session")
        results = await store_for(request).upsert_many(user_id, body.entities, body.session_id)
        return {
            "entities": [r.entity.to_json_dict() for r in results],
            "results": [r.to_json_dict() for r in results],
        }

    @app.get("/v1/users/{user_id}/entities", tags=["entities"])
    async def list_entities(
        user_id: str, request: Request, type: str | None = None
    ) -> dict[str, Any]:
        """Index entries of the user's entities, newest first (one KV read)."""
        _check_path(user_id, type)
        entries = await store_for(request).list(user_id, type)
        return {"entities": [e.to_json_dict() for e in entries], "count": len(entries)}

    @app.get("/v1/users/{user_id}/entities/{entity_type}/{entity_id}", tags=["entities"])
    async def get_entity(
        user_id: str, entity_type: str, entity_id: str, request: Request
    ) -> dict[str, Any]:
        _check_path(user_id, entity_type, entity_id)
        entity = await store_for(request).get(user_id, entity_type, entity_id)
        if entity is None:
            raise ApiError(404, "not_found", f"no {entity_type} {entity_id!r}")
        return entity.to_json_dict()

    @app.delete("/v1/users/{user_id}/entities/{entity_type}/{entity_id}", tags=["entities"])
    async def delete_entity(
        user_id: str, entity_type: str, entity_id: str, request: Request
    ) -> dict[str, Any]:
        _check_path(user_id, entity_type, entity_id)
        if not await store_for(request).delete(user_id, entity_type, entity_id):
            raise ApiError(404, "not_found", f"no {entity_type} {entity_id!r}")
        return {"deleted": {"type": entity_type, "id": entity_id}}

    @app.post("/v1/users/{user_id}/context", tags=["context"])
    async def context(user_id: str, body: ContextBody, request: Request) -> dict[str, Any]:
        """The `<entity_memory>` block for a task, with the entities in rank order."""
        _check_path(user_id)
        found = await store_for(request).retrieve_for_context(user_id, body.task, body.limit)
        docs = [e.to_json_dict() for e in found.entities]
        result: dict[str, Any] = {
            "context": assemble_entity_context(docs, body.max_tokens, body.task),
            "entities": docs,
        }
        if body.explain:
            result["scores"] = [s.to_json_dict() for s in found.scores]
        return result

    # --- admin: per-user tokens ----------------------------------------------------------------

    def require_admin(request: Request) -> TokenStore:
        principal = getattr(request.state, "principal", None)
        if principal is None or principal.kind == "user":
            raise ApiError(403, "forbidden", "admin token required")
        db = bindings(request).db
        if db is None:
            raise ApiError(503, "ledger_unavailable", "no D1 database is bound (HISTORY)")
        return TokenStore(db)

    @app.post("/v1/admin/tokens", tags=["admin"], status_code=201)
    async def create_token(body: TokenBody, request: Request) -> dict[str, Any]:
        """Mint a token scoped to one user. The token is in this response only."""
        validate_id(body.user_id, "user")
        return await require_admin(request).create(
            body.user_id, body.label, bindings(request).clock()
        )

    @app.get("/v1/admin/tokens", tags=["admin"])
    async def list_tokens(request: Request, user_id: str | None = None) -> dict[str, Any]:
        if user_id is not None:
            validate_id(user_id, "user")
        return {"tokens": await require_admin(request).list(user_id)}

    @app.delete("/v1/admin/tokens/{token_id}", tags=["admin"])
    async def revoke_token(token_id: str, request: Request) -> dict[str, Any]:
        validate_id(token_id, "token")
        if not await require_admin(request).revoke(token_id, bindings(request).clock()):
            raise ApiError(404, "not_found", f"no live token {token_id!r}")
        return {"revoked": token_id}

    # --- extraction ------------------------------------------------------------------------------

    @app.post(
        "/v1/users/{user_id}/sessions/{session_id}/extract",
        tags=["extraction"],
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {
                    "application/json": {
                        "schema": ExtractBody.model_json_schema(
                            ref_template="#/components/schemas/{model}"
                        )
                    },
                    "text/plain": {"schema": {"type": "string"}},
                },
            }
        },
    )
    async def extract(user_id: str, session_id: str, request: Request) -> dict[str, Any]:
        """Extract a session's entities and upsert them; re-sending a session is a no-op."""
        _check_path(user_id)
        validate_id(session_id, "session")
        if request.headers.get("content-type", "").startswith("text/plain"):
            raw: Any = (await request.body()).decode("utf-8", errors="replace")
        else:
            raw = await _read_json(request)
        if isinstance(raw, str):
            raw = {"transcript": raw}
        try:
            body = ExtractBody.model_validate(raw)
        except ValidationError as exc:
            raise ApiError(
                422, "invalid_request", "request does not validate", _pydantic_details(exc)
            ) from exc
        messages = list(body.messages or [])
        if body.transcript:
            try:
                messages += transcript_to_messages(body.transcript)
            except ValidationError as exc:
                raise ApiError(
                    422, "invalid_request", "transcript does not validate", _pydantic_details(exc)
                ) from exc
        b = bindings(request)
        pipeline = SessionExtraction(store_for(request), ledger_for(request), b, extractor_factory)
        outcome = await pipeline.run(user_id, session_id, messages, body.extractor)
        return outcome.to_json_dict()

    # --- ledger: history, changes, trends, export, forgetting, reindex -------------------------

    @app.get("/v1/users/{user_id}/entities/{entity_type}/{entity_id}/history", tags=["ledger"])
    async def history(
        user_id: str,
        entity_type: str,
        entity_id: str,
        request: Request,
        limit: int = Query(default=100, ge=1, le=1000),
    ) -> dict[str, Any]:
        """Every recorded version of one entity, newest first, with the fields that changed."""
        _check_path(user_id, entity_type, entity_id)
        versions = await require_ledger(request).history(user_id, entity_type, entity_id, limit)
        if not versions:
            raise ApiError(404, "not_found", f"no history for {entity_type} {entity_id!r}")
        return {"type": entity_type, "id": entity_id, "versions": versions}

    @app.get("/v1/users/{user_id}/changes", tags=["ledger"])
    async def changes(
        user_id: str,
        request: Request,
        since: int = Query(
            default=0, ge=0, le=2**53 - 1, description="epoch ms; changes after this"
        ),
        limit: int = Query(default=500, ge=1, le=5000),
    ) -> dict[str, Any]:
        """What changed since a time (e.g. the last session), grouped by entity."""
        _check_path(user_id)
        grouped = await require_ledger(request).changes_since(user_id, since, limit)
        return {"since": since, "entities": grouped, "count": len(grouped)}

    @app.get("/v1/users/{user_id}/trends", tags=["ledger"])
    async def trends(user_id: str, request: Request) -> dict[str, Any]:
        """Per metric: first/last/min/max and whether it improves; per pain point: recurrence."""
        _check_path(user_id)
        ledger = require_ledger(request)
        return {
            "metrics": metric_trends(await ledger.metric_observations(user_id)),
            "painPoints": pain_point_trends(await ledger.versions_of_type(user_id, "pain_point")),
        }

    @app.get("/v1/users/{user_id}/export", tags=["ledger"])
    async def export(user_id: str, request: Request) -> dict[str, Any]:
        """All live entities and their full history, as one document (data portability)."""
        _check_path(user_id)
        ledger = require_ledger(request)
        store = store_for(request)
        entities = await store.live_entities(user_id)
        return {
            "userId": user_id,
            "exportedAt": store.clock(),
            "entities": [e.to_json_dict() for e in entities],
            "history": await ledger.all_versions(user_id),
            "metricObservations": await ledger.metric_observations(user_id),
        }

    @app.delete("/v1/users/{user_id}", tags=["ledger"])
    async def forget_user(user_id: str, request: Request) -> dict[str, Any]:
        """Erase everything of the user in KV and D1, API tokens included (last, so a user's
        own token can repeat the call). Repeat while `complete` is false."""
        _check_path(user_id)
        db = require_ledger(request).db
        result = await store_for(request).forget_user(user_id)
        if result["complete"]:
            result["tokensDeleted"] = await TokenStore(db).forget_user(user_id)
        return result

    @app.post("/v1/users/{user_id}/reindex", tags=["maintenance"])
    async def reindex(user_id: str, request: Request) -> dict[str, Any]:
        """Rebuild the user's index from the entity keys KV holds."""
        _check_path(user_id)
        return await store_for(request).reindex(user_id)

    return app
