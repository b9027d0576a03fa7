"""Sync and async clients for the entity-memory HTTP API.

Both clients share one request/response core: every method builds a `_Request`, the sync client
sends it with `httpx.Client`, the async one with `httpx.AsyncClient`. API errors
(`{"error": {"code", "message"}}`) become typed exceptions carrying `.code` and `.status`;
429, 5xx and connection errors are retried with exponential backoff, honouring `Retry-After`.
"""

from __future__ import annotations

import asyncio
import email.utils
import os
import random
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict
from urllib.parse import quote

import httpx

from .ids import has_dot_segment, id_problem, type_problem

__all__ = [
    "DEFAULT_URL",
    "AsyncEntityMemory",
    "ConnectionFailed",
    "EntityMemory",
    "EntityMemoryError",
    "InvalidId",
    "InvalidRequest",
    "InvalidType",
    "LedgerUnavailable",
    "NotFound",
    "RateLimited",
    "ServerError",
    "TooLarge",
    "Unauthorized",
]

DEFAULT_URL = "http://127.0.0.1:8787"
EntityType = Literal["campaign", "metric", "decision", "pain_point", "preference"]
Extractor = Literal["rules", "workers-ai", "openai"]


# --- shapes ------------------------------------------------------------------------------------


class EntityIn(TypedDict, total=False):
    type: EntityType
    name: str
    content: str
    importance: float
    metadata: dict[str, Any]
    aliases: list[str]
    id: str


class Message(TypedDict):
    role: Literal["user", "assistant", "system"]
    content: str


# --- errors ------------------------------------------------------------------------------------


class EntityMemoryError(Exception):
    """Any failure talking to the service. `code` is the API's error code (e.g. `not_found`),
    `status` the HTTP status (None when the service could not be reached)."""

    def __init__(
        self,
        message: str,
        *,
        code: str = "error",
        status: int | None = None,
        details: Any = None,
        body: Any = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status
        self.details = details
        self.body = body

    def __str__(self) -> str:
        where = f"HTTP {self.status} " if self.status is not None else ""
        return f"{where}{self.code}: {self.message}"


class ConnectionFailed(EntityMemoryError):
    """The service could not be reached (refused, DNS, timeout), after the retries."""


class Unauthorized(EntityMemoryError):
    """401 `unauthorized`: missing or wrong bearer token."""


class NotFound(EntityMemoryError):
    """404 `not_found`."""


class InvalidId(EntityMemoryError):
    """400 `invalid_id`: a user, session or entity id the service refuses."""


class InvalidType(EntityMemoryError):
    """400 `invalid_type`: not one of the five entity types."""


class InvalidRequest(EntityMemoryError):
    """400/422: the body does not validate (`invalid_request`, `invalid_entity`, ...)."""


class TooLarge(EntityMemoryError):
    """413 `too_large`."""


class RateLimited(EntityMemoryError):
    """429, after the retries."""


class LedgerUnavailable(EntityMemoryError):
    """503 `ledger_unavailable`: the service has no D1 ledger bound."""


class ServerError(EntityMemoryError):
    """5xx, after the retries."""


_BY_CODE: dict[str, type[EntityMemoryError]] = {
    "unauthorized": Unauthorized,
    "not_found": NotFound,
    "invalid_id": InvalidId,
    "invalid_type": InvalidType,
    "invalid_request": InvalidRequest,
    "invalid_entity": InvalidRequest,
    "invalid_json": InvalidRequest,
    "invalid_extractor": InvalidRequest,
    "empty_conversation": InvalidRequest,
    "too_large": TooLarge,
    "ledger_unavailable": LedgerUnavailable,
}
_BY_STATUS: dict[int, type[EntityMemoryError]] = {
    401: Unauthorized,
    404: NotFound,
    400: InvalidRequest,
    413: TooLarge,
    422: InvalidRequest,
    429: RateLimited,
}


def error_from_response(response: httpx.Response) -> EntityMemoryError:
    try:
        body = response.json()
    except ValueError:
        body = None
    err = body.get("error") if isinstance(body, dict) else None
    if isinstance(err, dict):
        code = str(err.get("code") or "error")
        message = str(err.get("message") or response.reason_phrase)
        details = err.get("details")
    else:
        code, message, details = f"http_{response.status_code}", response.text[:500], None
    cls = _BY_CODE.get(code) or _BY_STATUS.get(response.status_code)
    if cls is None:
        cls = ServerError if response.status_code >= 500 else EntityMemoryError
    return cls(message, code=code, status=response.status_code, details=details, body=body)


# --- request core ------------------------------------------------------------------------------

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


@dataclass
class _Request:
    method: str
    path: str
    params: dict[str, Any] | None = None
    json: Any = None
    #: Turns the decoded JSON into the method's result.
    post: Any = None
    extra: dict[str, Any] = field(default_factory=dict)
    #: Seconds this request may take, where it asks the service to wait (None: the client's).
    timeout: float | None = None


def _seg(value: str) -> str:
    return quote(str(value), safe="")


def _id(value: str, kind: str) -> str:
    """`value` as a path segment, once it is an id the service accepts: refused here, before
    a URL is built, since a dot segment would address a parent path (`ids`)."""
    problem = id_problem(value, kind)
    if problem is not None:
        raise InvalidId(problem, code="invalid_id")
    return _seg(value)


def _type(value: str) -> str:
    problem = type_problem(value)
    if problem is not None:
        raise InvalidType(problem, code="invalid_type")
    return _seg(value)


def _checked(req: _Request) -> _Request:
    """The last guard before sending: no path with a dot segment leaves the client."""
    if has_dot_segment(req.path):
        raise InvalidId(f"refusing a path with a dot segment: {req.path!r}", code="invalid_id")
    return req


def retry_after_seconds(response: httpx.Response | None) -> float | None:
    """`Retry-After` as seconds (delta-seconds or an HTTP date), or None."""
    if response is None:
        return None
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class _Core:
    """Configuration and endpoint builders shared by the sync and async clients."""

    def __init__(
        self,
        base_url: str | None = None,
        token: str | None = None,
        *,
        user: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        url = base_url or os.environ.get("ENTITY_MEMORY_URL") or DEFAULT_URL
        self.base_url = url.rstrip("/")
        self.token = token if token is not None else os.environ.get("ENTITY_MEMORY_TOKEN") or None
        self.user = user or os.environ.get("ENTITY_MEMORY_USER") or None
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.headers = {"User-Agent": "entity-memory-client/0.1", **(headers or {})}
        if self.token:
            self.headers["Authorization"] = f"Bearer {self.token}"

    # -- helpers

    def _user(self, user: str | None) -> str:
        chosen = user or self.user
        if not chosen:
            raise ValueError("no user id: pass user=..., or set ENTITY_MEMORY_USER")
        return _id(chosen, "user")

    def _delay(self, attempt: int, response: httpx.Response | None) -> float:
        told = retry_after_seconds(response)
        if told is not None:
            return min(told, self.max_backoff)
        base = self.backoff * (2**attempt)
        return min(self.max_backoff, base * (0.5 + random.random() / 2))

    def _should_retry(self, attempt: int, response: httpx.Response | None) -> bool:
        if attempt >= self.max_retries:
            return False
        return response is None or response.status_code in RETRY_STATUSES

    @staticmethod
    def _result(req: _Request, response: httpx.Response) -> Any:
        if response.status_code >= 400:
            raise error_from_response(response)
        data = response.json() if response.content else None
        return req.post(data) if req.post else data

    @staticmethod
    def _conn_error(exc: Exception, base_url: str) -> ConnectionFailed:
        return ConnectionFailed(f"cannot reach {base_url}: {exc!r}", code="connection_failed")

    # -- endpoint builders (every method of both clients goes through one of these)

    def _health(self) -> _Request:
        return _Request("GET", "/healthz")

    def _upsert(
        self, entities: Sequence[EntityIn | Mapping[str, Any]], session_id: str, user: str | None
    ) -> _Request:
        body = {"session_id": session_id, "entities": [dict(e) for e in entities]}
        return _Request("PUT", f"/v1/users/{self._user(user)}/entities", json=body)

    def _list(self, type: str | None, user: str | None, values: bool = False) -> _Request:
        params = {"type": type} if type else {}
        if values:
            params["values"] = "true"
        return _Request("GET", f"/v1/users/{self._user(user)}/entities", params=params or None)

    def _entity_path(self, type: str, id: str, user: str | None) -> str:
        return f"/v1/users/{self._user(user)}/entities/{_type(type)}/{_id(id, 'entity')}"

    def _get(self, type: str, id: str, user: str | None) -> _Request:
        return _Request("GET", self._entity_path(type, id, user))

    def _delete(self, type: str, id: str, user: str | None) -> _Request:
        return _Request("DELETE", self._entity_path(type, id, user))

    def _history(self, type: str, id: str, limit: int | None, user: str | None) -> _Request:
        params = {"limit": limit} if limit else None
        return _Request("GET", self._entity_path(type, id, user) + "/history", params=params)

    def _changes(self, since: int, limit: int | None, user: str | None) -> _Request:
        params: dict[str, Any] = {"since": int(since)}
        if limit:
            params["limit"] = limit
        return _Request("GET", f"/v1/users/{self._user(user)}/changes", params=params)

    def _trends(self, user: str | None) -> _Request:
        return _Request("GET", f"/v1/users/{self._user(user)}/trends")

    def _export(self, user: str | None) -> _Request:
        return _Request("GET", f"/v1/users/{self._user(user)}/export")

    def _forget(self, user: str | None) -> _Request:
        return _Request("DELETE", f"/v1/users/{self._user(user)}")

    def _reindex(self, user: str | None) -> _Request:
        return _Request("POST", f"/v1/users/{self._user(user)}/reindex")

    def _context(
        self, task: str, limit: int, max_tokens: int, explain: bool, user: str | None
    ) -> _Request:
        body = {"task": task, "limit": limit, "max_tokens": max_tokens, "explain": explain}
        return _Request("POST", f"/v1/users/{self._user(user)}/context", json=body)

    def _extract(
        self,
        session_id: str,
        messages: Iterable[Message | Mapping[str, Any]] | None,
        transcript: str | None,
        extractor: str | None,
        user: str | None,
        wait: float,
    ) -> _Request:
        if messages is None and transcript is None:
            raise ValueError("extract needs messages or a transcript")
        body: dict[str, Any] = {}
        if messages is not None:
            body["messages"] = [{"role": m["role"], "content": m["content"]} for m in messages]
        if transcript is not None:
            body["transcript"] = transcript
        if extractor:
            body["extractor"] = extractor
        path = f"/v1/users/{self._user(user)}/sessions/{_id(session_id, 'session')}/extract"
        if wait <= 0:
            return _Request("POST", path, json=body)
        # The HTTP timeout outlasts the wait, so the service's 202 (not a timeout) ends it.
        params = {"wait": f"{wait:g}"}
        return _Request("POST", path, params=params, json=body, timeout=wait + self.timeout)

    def _job(self, job_id: str, user: str | None) -> _Request:
        return _Request("GET", f"/v1/users/{self._user(user)}/jobs/{_id(job_id, 'job')}")

    def _jobs(self, user: str | None) -> _Request:
        return _Request("GET", f"/v1/users/{self._user(user)}/jobs")


def _timeout(req: _Request) -> dict[str, Any]:
    return {} if req.timeout is None else {"timeout": req.timeout}


def _forget_done(result: Mapping[str, Any]) -> bool:
    return bool(result.get("complete", True))


def _merge_forget(total: dict[str, Any], part: Mapping[str, Any]) -> dict[str, Any]:
    for key, value in part.items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            total[key] = total.get(key, 0) + value
        else:
            total[key] = value
    return total


class EntityMemory(_Core):
    """Synchronous client.

    >>> mem = EntityMemory(user="alice")          # ENTITY_MEMORY_URL / _TOKEN from the env
    >>> mem.context("plan next week's budget")["context"]
    """

    def __init__(self, *args: Any, transport: httpx.BaseTransport | None = None, **kw: Any):
        super().__init__(*args, **kw)
        self._http = httpx.Client(
            base_url=self.base_url, headers=self.headers, timeout=self.timeout, transport=transport
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> EntityMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _send(self, req: _Request) -> Any:
        req = _checked(req)
        attempt = 0
        while True:
            response: httpx.Response | None = None
            try:
                response = self._http.request(
                    req.method, req.path, params=req.params, json=req.json, **_timeout(req)
                )
            except httpx.TransportError as exc:
                if not self._should_retry(attempt, None):
                    raise self._conn_error(exc, self.base_url) from exc
            else:
                if not self._should_retry(attempt, response):
                    return self._result(req, response)
            time.sleep(self._delay(attempt, response))
            attempt += 1

    def health(self) -> dict[str, Any]:
        return self._send(self._health())

    def upsert(
        self,
        entities: Sequence[EntityIn | Mapping[str, Any]],
        session_id: str,
        *,
        user: str | None = None,
    ) -> dict[str, Any]:
        """Upsert at most 100 entities; returns `{"entities", "results"}`."""
        return self._send(self._upsert(entities, session_id, user))

    def list(
        self, type: str | None = None, *, user: str | None = None, values: bool = False
    ) -> dict[str, Any]:
        """Index entries, newest first: `{"entities", "count"}`; `values` adds each one's
        value in a few words."""
        return self._send(self._list(type, user, values))

    def get(self, type: str, id: str, *, user: str | None = None) -> dict[str, Any]:
        return self._send(self._get(type, id, user))

    def delete(self, type: str, id: str, *, user: str | None = None) -> dict[str, Any]:
        return self._send(self._delete(type, id, user))

    def history(
        self, type: str, id: str, *, limit: int | None = None, user: str | None = None
    ) -> dict[str, Any]:
        return self._send(self._history(type, id, limit, user))

    def changes(
        self, since: int = 0, *, limit: int | None = None, user: str | None = None
    ) -> dict[str, Any]:
        """What changed after `since` (epoch ms), grouped by entity."""
        return self._send(self._changes(since, limit, user))

    def trends(self, *, user: str | None = None) -> dict[str, Any]:
        return self._send(self._trends(user))

    def export(self, *, user: str | None = None) -> dict[str, Any]:
        return self._send(self._export(user))

    def reindex(self, *, user: str | None = None) -> dict[str, Any]:
        return self._send(self._reindex(user))

    def forget_user(self, *, user: str | None = None, max_rounds: int = 100) -> dict[str, Any]:
        """Erase everything of the user, repeating the call while `complete` is false."""
        total: dict[str, Any] = {}
        for _ in range(max_rounds):
            part = self._send(self._forget(user))
            _merge_forget(total, part)
            if _forget_done(part):
                break
        return total

    def context(
        self,
        task: str,
        *,
        limit: int = 20,
        max_tokens: int = 4000,
        explain: bool = False,
        user: str | None = None,
    ) -> dict[str, Any]:
        """`{"context": "<entity_memory>...", "entities": [...], "scores"?}` for a task."""
        return self._send(self._context(task, limit, max_tokens, explain, user))

    def extract(
        self,
        session_id: str,
        messages: Iterable[Message | Mapping[str, Any]] | None = None,
        *,
        transcript: str | None = None,
        extractor: str | None = None,
        user: str | None = None,
        wait: float = 0,
    ) -> dict[str, Any]:
        """Queue the extraction of a session: `{"job", "statusUrl"}` (202), or with `wait`
        seconds, the result once done within them (`{"processed", "entities", ..., "job"}`).
        Re-sending a session finds its job; it is never run twice."""
        return self._send(self._extract(session_id, messages, transcript, extractor, user, wait))

    def job(self, job_id: str, *, user: str | None = None) -> dict[str, Any]:
        """One extraction job: state, chunks done, and its result once done."""
        return self._send(self._job(job_id, user))

    def jobs(self, *, user: str | None = None) -> dict[str, Any]:
        """The user's extraction jobs, newest first: `{"jobs": [...]}`."""
        return self._send(self._jobs(user))


class AsyncEntityMemory(_Core):
    """Asynchronous client, same methods as `EntityMemory`, awaited."""

    def __init__(
        self, *args: Any, transport: httpx.AsyncBaseTransport | None = None, **kw: Any
    ) -> None:
        super().__init__(*args, **kw)
        self._http = httpx.AsyncClient(
            base_url=self.base_url, headers=self.headers, timeout=self.timeout, transport=transport
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncEntityMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _send(self, req: _Request) -> Any:
        req = _checked(req)
        attempt = 0
        while True:
            response: httpx.Response | None = None
            try:
                response = await self._http.request(
                    req.method, req.path, params=req.params, json=req.json, **_timeout(req)
                )
            except httpx.TransportError as exc:
                if not self._should_retry(attempt, None):
                    raise self._conn_error(exc, self.base_url) from exc
            else:
                if not self._should_retry(attempt, response):
                    return self._result(req, response)
            await asyncio.sleep(self._delay(attempt, response))
            attempt += 1

    async def health(self) -> dict[str, Any]:
        return await self._send(self._health())

    async def upsert(
        self,
        entities: Sequence[EntityIn | Mapping[str, Any]],
        session_id: str,
        *,
        user: str | None = None,
    ) -> dict[str, Any]:
        return await self._send(self._upsert(entities, session_id, user))

    async def list(
        self, type: str | None = None, *, user: str | None = None, values: bool = False
    ) -> dict[str, Any]:
        return await self._send(self._list(type, user, values))

    async def get(self, type: str, id: str, *, user: str | None = None) -> dict[str, Any]:
        return await self._send(self._get(type, id, user))

    async def delete(self, type: str, id: str, *, user: str | None = None) -> dict[str, Any]:
        return await self._send(self._delete(type, id, user))

    async def history(
        self, type: str, id: str, *, limit: int | None = None, user: str | None = None
    ) -> dict[str, Any]:
        return await self._send(self._history(type, id, limit, user))

    async def changes(
        self, since: int = 0, *, limit: int | None = None, user: str | None = None
    ) -> dict[str, Any]:
        return await self._send(self._changes(since, limit, user))

    async def trends(self, *, user: str | None = None) -> dict[str, Any]:
        return await self._send(self._trends(user))

    async def export(self, *, user: str | None = None) -> dict[str, Any]:
        return await self._send(self._export(user))

    async def reindex(self, *, user: str | None = None) -> dict[str, Any]:
        return await self._send(self._reindex(user))

    async def forget_user(
        self, *, user: str | None = None, max_rounds: int = 100
    ) -> dict[str, Any]:
        total: dict[str, Any] = {}
        for _ in range(max_rounds):
            part = await self._send(self._forget(user))
            _merge_forget(total, part)
            if _forget_done(part):
                break
        return total

    async def context(
        self,
        task: str,
        *,
        limit: int = 20,
        max_tokens: int = 4000,
        explain: bool = False,
        user: str | None = None,
    ) -> dict[str, Any]:
        return await self._send(self._context(task, limit, max_tokens, explain, user))

    async def extract(
        self,
        session_id: str,
        messages: Iterable[Message | Mapping[str, Any]] | None = None,
        *,
        transcript: str | None = None,
        extractor: str | None = None,
        user: str | None = None,
        wait: float = 0,
    ) -> dict[str, Any]:
        return await self._send(
            self._extract(session_id, messages, transcript, extractor, user, wait)
        )

    async def job(self, job_id: str, *, user: str | None = None) -> dict[str, Any]:
        return await self._send(self._job(job_id, user))

    async def jobs(self, *, user: str | None = None) -> dict[str, Any]:
        return await self._send(self._jobs(user))
