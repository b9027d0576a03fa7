"""What every request passes before a route: the body caps, the caller's token, the rate
limit; and after it: the storage-operation headers.

One middleware, because the order matters: a body is refused before anything reads it, and
the token is checked before any route touches storage.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from entity_memory.domain import safe_json
from entity_memory.domain.keys import InvalidId, validate_id
from entity_memory.domain.limits import MAX_BODY_BYTES
from entity_memory.http.deps import request_bindings
from entity_memory.http.errors import RETRY_AFTER_STORAGE_S, ApiError, error_response
from entity_memory.http.request_checks import check_path_ids, host_problem
from entity_memory.service.auth import Caller, Principal, Refusal, TokenStore, admission_for
from entity_memory.service.settings import ForwardWrite
from entity_memory.service.user_writer import SESSION_TIME_HEADER

logger = logging.getLogger(__name__)

KV_OPS_HEADER = "X-KV-Operations"
D1_OPS_HEADER = "X-D1-Statements"
_TOO_LARGE = f"request body over {MAX_BODY_BYTES} bytes"


async def body_problem(request: Request) -> JSONResponse | None:
    """Refuse a body before any route parses it: over the size cap (declared or, for chunked
    bodies, as read) or nested deeper than the parser can survive."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        return error_response(413, "too_large", _TOO_LARGE)
    if request.method not in ("POST", "PUT", "PATCH", "DELETE"):
        return None
    body = await request.body()  # Starlette caches it for the route
    if len(body) > MAX_BODY_BYTES:
        return error_response(413, "too_large", _TOO_LARGE)
    content_type = request.headers.get("content-type", "")
    if content_type and "json" not in content_type:
        return None  # a plain-text transcript is not parsed as JSON
    try:
        safe_json.check_depth(body)
    except safe_json.JsonTooDeep as exc:
        return error_response(400, "json_too_deep", str(exc))
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
    outcome = await admission.admit(caller, b.settings.api_token, tokens, b.rate_limit, b.clock())
    if isinstance(outcome, Refusal):
        return error_response(outcome.status, outcome.code, outcome.message, None, outcome.headers)
    return outcome


#: The routes that write a user's memory, run by that user's single writer.
_WRITES = re.compile(
    r"^/v1/users/(?P<user>[^/]+)"
    r"(?:/entities(?:/[^/]+/[^/]+)?|/sessions/[^/]+/extract|/reindex)?$"
)


def write_target(method: str, path: str) -> str | None:
    """The user whose writer runs this request, or None for a read."""
    found = _WRITES.match(path)
    if found is None or method not in ("PUT", "POST", "DELETE"):
        return None
    tail = path[found.end("user") :]
    if method == "PUT" and tail != "/entities":
        return None
    if method == "POST" and not (tail.endswith("/extract") or tail in ("/reindex", "/expired")):
        return None
    if method == "DELETE" and not (tail == "" or tail.count("/") == 3):
        return None
    return found.group("user")


async def forward(request: Request, forward_write: ForwardWrite, user_id: str) -> Response:
    validate_id(user_id, "user")
    body = await request.body()
    headers = [
        (k, v)
        for k, v in request.headers.items()
        if k.lower() not in ("host", SESSION_TIME_HEADER)  # the latter is the Worker's to set
    ]
    status, out_headers, content = await forward_write(
        user_id, request.method, str(request.url), headers, body
    )
    response = Response(content, status_code=status)
    for name, value in out_headers:
        if name.lower() not in ("content-length", "transfer-encoding"):
            response.headers.append(name, value)
    return response


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
            b = await request_bindings(request)
            if b.writer_state is not None:  # forwarded by the Worker, which checked it
                request.state.principal = Principal("admin")
                return await _with_headers(request, call_next)
            admitted = await _admit(request)
            if isinstance(admitted, JSONResponse):
                return admitted
            request.state.principal = admitted
            check_path_ids(_raw_path(request))
            user = write_target(request.method, path)
            if b.forward_write is not None and user is not None:
                return await forward(request, b.forward_write, user)
        except InvalidId as exc:
            return error_response(400, "invalid_id", str(exc), {"kind": exc.kind})
        except ApiError as exc:
            return error_response(exc.status, exc.code, exc.message)
        except Exception:
            logger.exception("could not authenticate or forward")
            return error_response(
                503,
                "storage_unavailable",
                "could not reach storage; retry",
                headers={"Retry-After": str(RETRY_AFTER_STORAGE_S)},
            )
    return await _with_headers(request, call_next)


async def _with_headers(request: Request, call_next: Callable[[Request], Awaitable[Any]]) -> Any:
    """The route's response, with the storage operations it cost."""
    response = await call_next(request)
    counter = getattr(request.state, "kv_counter", None)
    if counter is not None:
        response.headers[KV_OPS_HEADER] = counter.summary() or "none"
    d1 = getattr(request.state, "d1_counter", None)
    if d1 is not None:
        response.headers[D1_OPS_HEADER] = f"calls={d1.calls},statements={d1.statements}"
    return response


def install_guard(app: FastAPI) -> None:
    app.middleware("http")(guard)
