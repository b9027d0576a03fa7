"""What every request passes before a route: the body caps, the caller's token, the rate
limit; and after it: the storage-operation headers.

One middleware, because the order matters: a body is refused before anything reads it, and
the token is checked before any route touches storage.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from entity_memory.domain import safe_json
from entity_memory.domain.keys import InvalidId
from entity_memory.domain.limits import MAX_BODY_BYTES
from entity_memory.http.deps import request_bindings
from entity_memory.http.errors import RETRY_AFTER_STORAGE_S, ApiError, error_response
from entity_memory.http.request_checks import check_path_ids, host_problem
from entity_memory.service.auth import Caller, Principal, Refusal, TokenStore, admission_for

logger = logging.getLogger(__name__)

KV_OPS_HEADER = "X-KV-Operations"
#: Index-key writes the user's writer has made so far (benches check coalescing).
INDEX_WRITES_HEADER = "X-Index-Writes"
D1_OPS_HEADER = "X-D1-Statements"
#: Calls a read made to the user's writer for its index (`WRITE_ACK=committed`).
WRITER_READS_HEADER = "X-Writer-Reads"
TOO_LARGE_MESSAGE = f"request body over {MAX_BODY_BYTES} bytes"


def declared_too_large(content_length: str | None) -> bool:
    """Whether a declared `Content-Length` passes the body cap (refused before reading)."""
    declared = (content_length or "").strip()
    return declared.isdigit() and int(declared) > MAX_BODY_BYTES


async def body_problem(request: Request) -> JSONResponse | None:
    """Refuse a body before any route parses it: over the size cap (declared or, for chunked
    bodies, as read) or nested deeper than the parser can survive. Every body is measured,
    whatever its content type says: FastAPI parses `application/JSON`, `+json` types and bodies
    with no content type as JSON, and a check that guesses which it will parse can guess
    wrong. The measure is linear in the body's length (`safe_json`), and a plain-text
    transcript nests no brackets 64 deep."""
    if declared_too_large(request.headers.get("content-length")):
        return error_response(413, "too_large", TOO_LARGE_MESSAGE)
    # Read whatever the method and headers say: an HTTP/2 body needs no Content-Length.
    body = await request.body()  # Starlette caches it for the route
    if len(body) > MAX_BODY_BYTES:
        return error_response(413, "too_large", TOO_LARGE_MESSAGE)
    if safe_json.nesting_exceeds(body):
        message = f"JSON nests deeper than {safe_json.MAX_JSON_DEPTH} levels"
        return error_response(400, "json_too_deep", message)
    return None


def client_address(request: Request) -> str:
    """The caller's address: Cloudflare's `CF-Connecting-IP`, else the socket's peer."""
    return request.headers.get("cf-connecting-ip") or (
        request.client.host if request.client else "unknown"
    )


def _raw_path(request: Request) -> str:
    """The encoded path: "ann%2Fbob" must not pass as a path under "ann/"."""
    raw = request.scope.get("raw_path")
    return raw.decode("latin-1") if raw else request.url.path


async def _admit(request: Request) -> Principal | JSONResponse:
    """The caller of a `/v1` route, or the answer that turns it away (`service.auth`)."""
    b = await request_bindings(request)
    caller = Caller(
        authorization=request.headers.get("authorization"),
        address=client_address(request),
        raw_path=_raw_path(request),
    )
    tokens = None if b.db is None else TokenStore(b.db, b.settings.api_token)
    admission = admission_for(request.app.state, b.vars)
    # Budgets count on the Worker's clock: `X-Entity-Memory-Now` moves the data's clock only.
    clock = request.state.worker_clock
    outcome = await admission.admit(caller, b.settings.api_token, tokens, b.rate_limit, clock)
    if isinstance(outcome, Refusal):
        return error_response(outcome.status, outcome.code, outcome.message, None, outcome.headers)
    return outcome


async def guard(request: Request, call_next: Callable[[Request], Awaitable[Any]]) -> Any:
    bad_host = host_problem(request.headers)
    if bad_host is not None:
        return error_response(400, "invalid_host", bad_host)
    problem = await body_problem(request)
    if problem is not None:
        return problem
    path = request.url.path
    if path.startswith("/v1/") or path == "/v1":
        try:
            admitted = await _admit(request)
            if isinstance(admitted, JSONResponse):
                return admitted
            request.state.principal = admitted
            check_path_ids(_raw_path(request))
        except InvalidId as exc:
            return error_response(400, "invalid_id", str(exc), {"kind": exc.kind})
        except ApiError as exc:
            return error_response(exc.status, exc.code, exc.message)
        except Exception:
            logger.exception("could not authenticate")
            return error_response(
                503,
                "storage_unavailable",
                "could not reach storage; retry",
                headers={"Retry-After": str(RETRY_AFTER_STORAGE_S)},
            )
    return await _with_headers(request, call_next)


async def _with_headers(request: Request, call_next: Callable[[Request], Awaitable[Any]]) -> Any:
    """The route's response, with the storage operations it cost, the user's writer's
    included (a write's KV calls are made there)."""
    response = await call_next(request)
    writer = getattr(request.state, "writer", None)
    costs = writer.costs if writer is not None else None
    counter = getattr(request.state, "kv_counter", None)
    if counter is not None:
        ops = Counter(counter.ops) + Counter(costs.kv_ops if costs else {})
        response.headers[KV_OPS_HEADER] = ",".join(f"{k}={v}" for k, v in sorted(ops.items()))
        response.headers[KV_OPS_HEADER] = response.headers[KV_OPS_HEADER] or "none"
    d1 = getattr(request.state, "d1_counter", None)
    if d1 is not None:
        calls = d1.calls + (costs.d1_calls if costs else 0)
        statements = d1.statements + (costs.d1_statements if costs else 0)
        response.headers[D1_OPS_HEADER] = f"calls={calls},statements={statements}"
    if costs is not None:
        response.headers[INDEX_WRITES_HEADER] = str(costs.index_writes)
    asks = getattr(request.state, "index_asks", None)
    if asks is not None and asks.asks:
        response.headers[WRITER_READS_HEADER] = str(asks.asks)
    return response


def install_guard(app: FastAPI) -> None:
    app.middleware("http")(guard)
