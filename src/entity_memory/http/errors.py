"""One table from the errors the core raises to HTTP answers, and the error envelope.

Every error is `{"error": {"code", "message", "details"?}}` with a stable machine-readable
code, so an agent can branch on it. The core raises domain errors and never picks a status:
this module is the only place that knows HTTP codes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from entity_memory.domain.keys import InvalidId, InvalidType
from entity_memory.domain.kind import entity_types
from entity_memory.domain.limits import MAX_QUEUED_JOB_BYTES, MAX_QUEUED_JOBS
from entity_memory.service.entity_merge import (
    InvalidMerge,
    NoSuchEntity,
    ReservedSession,
    VersionConflict,
)
from entity_memory.service.extraction.request_errors import ExtractionRequestError
from entity_memory.service.jobs import JobQueueFull, NoSuchJob
from entity_memory.service.user_writer import UserErased
from entity_memory.service.writers import Refusal, WriterRefused, WriterUnavailable
from entity_memory.storage.guard import StorageUnavailable
from entity_memory.storage.store import CorruptRecord

logger = logging.getLogger(__name__)

#: Seconds a client should wait before retrying after a transient storage failure.
RETRY_AFTER_STORAGE_S = 1
#: Seconds a client whose job queue is full is asked to wait (a chunk takes seconds).
RETRY_AFTER_QUEUE_FULL_S = 30


class ApiError(Exception):
    """An HTTP answer decided at the edge (auth, a missing entity, a bad body)."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: Any | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.details, self.headers = details, headers


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


def pydantic_details(exc: ValidationError | RequestValidationError) -> list[dict[str, Any]]:
    """Pydantic's errors without echoing whole inputs back (they may be large or sensitive)."""
    details = []
    for err in exc.errors():
        loc = [p for p in err.get("loc", ()) if p != "body"]
        msg = str(err.get("msg", "")).removeprefix("Value error, ")
        details.append({"loc": loc, "msg": msg, "type": err.get("type")})
    return details


def naming_first_problem(message: str, details: list[dict[str, Any]]) -> str:
    """`message` with the first problem after it (`task: Field required`): a client that
    shows only the message still learns what to fix; the details list them all."""
    if not details:
        return message
    where = ".".join(str(part) for part in details[0]["loc"])
    return f"{message}: {where + ': ' if where else ''}{details[0]['msg']}"


#: HTTP status of each extraction error code.
EXTRACTION_ERROR_STATUS = {
    "empty_conversation": 422,
    "too_large": 413,
    "invalid_extractor": 400,
    "extractor_unavailable": 400,
    "extractor_misconfigured": 503,
}
#: Starlette's own 400 is a body it could not decode (invalid UTF-8): not JSON, as routes that
#: read their body themselves answer (http/body.py).
_HTTP_CODES = {400: "invalid_json", 404: "not_found", 405: "method_not_allowed"}


@dataclass(frozen=True)
class Problem:
    status: int
    code: str
    message: str
    details: Any | None = None
    headers: dict[str, str] | None = None


def _storage(exc: Exception) -> Problem:
    logger.warning("storage unavailable: %s", exc)
    retry = {"Retry-After": str(RETRY_AFTER_STORAGE_S)}
    return Problem(503, "storage_unavailable", "storage failed; retry the request", None, retry)


def _corrupt(exc: Exception) -> Problem:
    logger.error("corrupt record: %s", exc)
    return Problem(409, "corrupt_record", "this stored entity does not validate; PUT or DELETE it")


def _extraction(exc: Exception) -> Problem:
    assert isinstance(exc, ExtractionRequestError)
    return Problem(EXTRACTION_ERROR_STATUS.get(exc.code, 400), exc.code, exc.message)


def _queue_full(exc: Exception) -> Problem:
    """429 with Retry-After: the user's own queue is full; it empties as its jobs run."""
    assert isinstance(exc, JobQueueFull)
    details = {
        "queuedJobs": exc.jobs,
        "queuedBytes": exc.queued_bytes,
        "maxQueuedJobs": MAX_QUEUED_JOBS,
        "maxQueuedBytes": MAX_QUEUED_JOB_BYTES,
    }
    retry = {"Retry-After": str(RETRY_AFTER_QUEUE_FULL_S)}
    return Problem(429, "job_queue_full", str(exc), details, retry)


def _conflict(exc: Exception) -> Problem:
    assert isinstance(exc, VersionConflict)
    details = {
        "type": exc.entity_type,
        "id": exc.entity_id,
        "expectedVersion": exc.expected,
        "currentVersion": exc.current,
    }
    return Problem(409, "version_conflict", str(exc), details)


def _refused(exc: Exception) -> Problem:
    """What the user's writer answered: its own answer, passed on as it is."""
    assert isinstance(exc, WriterRefused)
    r = exc.refusal
    return Problem(r.status, r.code, r.message, r.details, r.headers)


def _unreachable(exc: Exception) -> Problem:
    logger.warning("writer unavailable: %s", exc)
    retry = {"Retry-After": str(RETRY_AFTER_STORAGE_S)}
    return Problem(
        503, "writer_unavailable", "the user's writer did not answer; retry", None, retry
    )


def _invalid_request(exc: RequestValidationError) -> Problem:
    """A body that is not JSON is 400 `invalid_json` on every route (as on those that read
    their body themselves); one that is JSON but does not validate, 422 `invalid_request`."""
    if any(error.get("type") == "json_invalid" for error in exc.errors()):
        return Problem(400, "invalid_json", "request body is not JSON", pydantic_details(exc))
    details = pydantic_details(exc)
    message = naming_first_problem("request does not validate", details)
    return Problem(422, "invalid_request", message, details)


def _internal(exc: Exception) -> Problem:
    logger.exception("unhandled error", exc_info=exc)
    return Problem(500, "internal", "internal error")


#: Exception type -> its answer. Looked up along the exception's MRO by Starlette, so the
#: most specific entry wins and `Exception` is the last resort.
ERROR_TABLE: dict[type[Exception], Callable[[Exception], Problem]] = {
    ApiError: lambda e: Problem(e.status, e.code, e.message, e.details, e.headers),  # type: ignore[attr-defined]
    ExtractionRequestError: _extraction,
    StorageUnavailable: _storage,
    WriterRefused: _refused,
    WriterUnavailable: _unreachable,
    CorruptRecord: _corrupt,
    NoSuchJob: lambda e: Problem(404, "job_not_found", f"no extraction job {e} for this user"),
    JobQueueFull: _queue_full,
    VersionConflict: _conflict,
    NoSuchEntity: lambda e: Problem(404, "not_found", str(e)),
    ReservedSession: lambda e: Problem(400, "reserved_session", str(e)),
    InvalidMerge: lambda e: Problem(400, "invalid_merge", str(e)),
    UserErased: lambda e: Problem(
        410, "user_erased", "the user was erased after this request's token was checked"
    ),
    InvalidId: lambda e: Problem(400, "invalid_id", str(e), {"kind": e.kind}),  # type: ignore[attr-defined]
    InvalidType: lambda e: Problem(400, "invalid_type", str(e), {"allowed": list(entity_types())}),
    RequestValidationError: lambda e: _invalid_request(e),  # type: ignore[arg-type]
    StarletteHTTPException: lambda e: Problem(
        e.status_code,  # type: ignore[attr-defined]
        _HTTP_CODES.get(e.status_code, "http_error"),  # type: ignore[attr-defined]
        str(e.detail),  # type: ignore[attr-defined]
    ),
    Exception: _internal,
}


def problem_for(exc: Exception) -> Problem:
    for cls in type(exc).__mro__:
        if cls in ERROR_TABLE:
            return ERROR_TABLE[cls](exc)
    return _internal(exc)


def refusal_for(exc: Exception) -> Refusal:
    """The answer to an exception raised inside the user's writer, as it crosses back."""
    p = problem_for(exc)
    return Refusal(
        status=p.status, code=p.code, message=p.message, details=p.details, headers=p.headers
    )


#: Where a client that called a route that does not exist finds the ones that do.
ROUTES_HINT = "the routes are listed at /openapi.json and in docs/api.md"


def no_such_route(request: Request, exc: StarletteHTTPException) -> Problem | None:
    """The router's own 404 and 405 (no route has this path, or not for this method), with
    what was asked and where the routes are: `route_not_found` is not an entity's 404."""
    method, path = request.method, request.url.path
    if exc.status_code == 404 and exc.detail == "Not Found":
        message = f"no route {method} {path}"
        return Problem(
            404, "route_not_found", message, {"method": method, "path": path, "hint": ROUTES_HINT}
        )
    if exc.status_code == 405:
        allowed = (exc.headers or {}).get("Allow", "")
        message = f"{path} does not take {method}" + (f" (it takes {allowed})" if allowed else "")
        details = {
            "method": method,
            "path": path,
            "allowed": [m.strip() for m in allowed.split(",") if m.strip()],
        }
        return Problem(405, "method_not_allowed", message, details, exc.headers)
    return None


def install_error_handlers(app: FastAPI) -> None:
    async def handle(request: Request, exc: Exception) -> JSONResponse:
        p = None
        if isinstance(exc, StarletteHTTPException):
            p = no_such_route(request, exc)
        p = p or problem_for(exc)
        return error_response(p.status, p.code, p.message, p.details, p.headers)

    for exc_type in ERROR_TABLE:
        app.add_exception_handler(exc_type, handle)
