"""The Worker side of the core's bindings: Workers KV and D1 behind the core's protocols,
Workers AI as `ai_run`, the Workers `fetch` as `http_post`, and the vars and secrets as `vars`.

This is the only module besides entry.py that knows about the Workers runtime. It expects the
env as the SDK hands it to a `WorkerEntrypoint` (`self.env`, an `_EnvWrapper`), where a
`KvNamespace` binding already converts Python arguments to JS (dicts become objects, None
becomes null) and JS results to Python (objects become dicts, a Map becomes a dict).
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Coroutine, Iterator, Mapping, Sequence
from typing import Any

from adapters.durable_object import durable_writers
from entity_memory.embeddings.embedder import AiRun
from entity_memory.http.middleware import TOO_LARGE_MESSAGE, declared_too_large
from entity_memory.service.bindings import Bindings
from entity_memory.settings import VAR_NAMES, HttpPost, RateLimit, Settings
from entity_memory.storage.index_snapshots import IndexSnapshots
from entity_memory.storage.kv import (
    MAX_BULK_GET_KEYS,
    MAX_LIST_LIMIT,
    KVError,
    KVListKey,
    KVListPage,
    check_put,
)


def _plain(value: Any) -> Any:
    """Deep-copy the SDK's results into plain Python containers.

    The SDK returns `JsDict` (a dict subclass with attribute access) for JS objects; the core
    compares, serialises and stores these, so hand it ordinary dicts and lists. Used only for
    small results (a list page, an AI answer, a D1 result off the host): entity values are
    read from KV as text and parsed by `json.loads`, which already yields plain containers.
    """
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


class WorkersKV:
    """`entity_memory.storage.kv.KVNamespace` over a Workers KV binding.

    Requests KV would refuse are refused here first with the same `KVError` as `InMemoryKV`,
    so the core sees one error type whichever namespace it runs on.
    """

    def __init__(self, binding: Any) -> None:
        self._kv = binding

    async def get_json(self, key: str) -> Any | None:
        # As bytes, decoded and parsed once here: KV's "json" type would parse on the JS side
        # and convert every node to Python, and "text" would decode into a JS string that is
        # then copied into Python (~25 ms in Pyodide for the ~4 MB index of 10k entities; the
        # bytes arrive as a memoryview, one copy). The bytes are dropped before parsing: kept,
        # they add their size to the request's peak (wasm memory 75 MB instead of 62 at 10k).
        data = await self._kv.get(key, "arrayBuffer")
        if data is None:
            return None
        text = str(data, "utf-8")
        del data
        return json.loads(text)

    async def get_text(self, key: str) -> bytes | None:
        # The bytes as they arrive (a memoryview, copied once): pydantic parses them directly.
        data = await self._kv.get(key, "arrayBuffer")
        return None if data is None else bytes(data)

    async def get_json_many(self, keys: Sequence[str]) -> dict[str, Any | None]:
        if not keys:
            return {}
        if len(keys) > MAX_BULK_GET_KEYS:
            raise KVError(f"bulk get takes at most {MAX_BULK_GET_KEYS} keys")
        # One bulk read (at most 100 keys, enforced by KV itself; bulk reads take "text" or
        # "json" only); the JS Map it returns has an entry, possibly null, for every key.
        found = await self._kv.get(list(keys), "text")
        texts: Mapping[str, str | None] = found if found is not None else {}
        out: dict[str, Any | None] = {}
        for key in keys:
            text = texts.get(key)
            out[key] = None if text is None else json.loads(text)
        return out

    async def put(
        self,
        key: str,
        value: str,
        *,
        expiration_ttl: int | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        check_put(key, expiration_ttl, metadata)
        options: dict[str, Any] = {}
        if expiration_ttl is not None:
            options["expirationTtl"] = expiration_ttl
        if metadata is not None:
            options["metadata"] = metadata
        if options:
            await self._kv.put(key, value, options)
        else:
            await self._kv.put(key, value)

    async def delete(self, key: str) -> None:
        await self._kv.delete(key)

    async def list(
        self, *, prefix: str = "", limit: int = MAX_LIST_LIMIT, cursor: str | None = None
    ) -> KVListPage:
        options: dict[str, Any] = {"limit": max(1, min(limit, MAX_LIST_LIMIT))}
        if prefix:
            options["prefix"] = prefix
        if cursor:
            options["cursor"] = cursor
        page = _plain(await self._kv.list(options))
        keys = [
            KVListKey(
                name=item["name"],
                expiration=item.get("expiration"),
                metadata=item.get("metadata"),
            )
            for item in page.get("keys", [])
        ]
        complete = bool(page.get("list_complete", True))
        return KVListPage(
            keys=keys, list_complete=complete, cursor=None if complete else page.get("cursor")
        )


#: The local host's D1 wrapper (local/runtime.mjs `D1_HOST_BATCH`): a whole batch as JSON.
D1_HOST_BATCH = "hostBatchJson"
#: Integers beyond this lose precision as JSON numbers parsed by JS.
_JS_SAFE_INT = 2**53 - 1


def _json_safe(params: Sequence[Any]) -> bool:
    """Whether JSON carries these params to JS as the SDK's conversion would: no bytes, no
    integer past 2**53, no NaN or infinity."""
    for value in params:
        if value is None or isinstance(value, str | bool):
            continue
        if isinstance(value, int):
            if abs(value) > _JS_SAFE_INT:
                return False
        elif not (isinstance(value, float) and math.isfinite(value)):
            return False
    return True


class WorkersD1:
    """`entity_memory.storage.d1.D1Database` over a D1 binding (`prepare().bind()`, `batch`).

    Two paths, picked by what the binding can do. On workerd, `prepare`/`bind` are cheap
    in-isolate calls, so statements are built from Python. The local host's D1 wrapper also
    has `hostBatchJson` (local/runtime.mjs): there every `prepare`/`bind` from Python crosses
    the SDK's conversions and getPlatformProxy's proxy (40-130 ms each, most of a write's
    time), so the statements cross once as JSON and JS runs them in one round trip. The
    capability is probed rather than configured: production never depends on a host-only
    method, and the host never pays per statement. Values JSON cannot carry as the SDK would
    (bytes, integers past 2**53, NaN) take the SDK path.
    """

    def __init__(self, binding: Any) -> None:
        self._db = binding
        self._host_batch = getattr(binding, D1_HOST_BATCH, None)

    def _statement(self, sql: str, params: Sequence[Any]) -> Any:
        prepared = self._db.prepare(sql)
        return prepared.bind(*params) if params else prepared

    def _can_host_batch(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> bool:
        return self._host_batch is not None and all(_json_safe(p) for _, p in statements)

    async def _run_on_host(
        self, statements: Sequence[tuple[str, Sequence[Any]]]
    ) -> list[list[dict[str, Any]]]:
        assert self._host_batch is not None
        payload = json.dumps([[sql, list(params)] for sql, params in statements])
        return json.loads(await self._host_batch(payload))

    async def all(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        if self._can_host_batch([(sql, params)]):
            return (await self._run_on_host([(sql, params)]))[0]
        result = _plain(await self._statement(sql, params).all())
        return list(result.get("results") or [])

    async def batch(
        self, statements: Sequence[tuple[str, Sequence[Any]]]
    ) -> list[list[dict[str, Any]]]:
        if not statements:
            return []
        # D1 runs a batch as one transaction: all statements apply, or none.
        if self._can_host_batch(statements):
            return await self._run_on_host(statements)
        results = _plain(await self._db.batch([self._statement(s, p) for s, p in statements]))
        return [list(r.get("results") or []) for r in results]


def _env_lookup(env: Any):
    """Vars and secrets are plain values on env (strings, or numbers from JSON vars).

    An absent name reads as None, and so does a binding of that name: it is not a setting.
    """

    def lookup(name: str) -> Any | None:
        value = getattr(env, name, None)
        return value if isinstance(value, str | int | float) else None

    return lookup


def workers_ai_run(binding: Any) -> AiRun:
    """`AiRun` over a Workers AI binding (`env.AI`). Failures propagate; the extractor turns
    them into `ExtractionError` (offline, the binding throws "needs to be run remotely").

    The reply crosses as one JSON string, not through the SDK's wrapper: the wrapper converts
    it node by node and walks it again for nulls, and `_plain` would copy it once more, which
    for the embeddings of a 20-entity write (20 x 1,024 floats) was half of the write's CPU.
    A binding that is not the SDK's wrapper (a test's) is called as it is.
    """
    raw = getattr(binding, "_binding", None)

    async def ai_run(model: str, inputs: dict[str, Any]) -> Any:
        if raw is None:
            return _plain(await binding.run(model, inputs))
        from js import JSON

        # The inputs cross as JSON too: `to_js` turns large Python ints into BigInts, which
        # the binding's own JSON serialisation refuses ("Do not know how to serialize a BigInt").
        reply = await raw.run(model, JSON.parse(json.dumps(inputs)))
        return json.loads(JSON.stringify(reply))

    return ai_run


async def _fetch_post(
    url: str, headers: Mapping[str, str], body: bytes
) -> tuple[int, str, dict[str, str]]:
    from workers import fetch  # the Workers runtime only; imported on first use

    response = await fetch(url, method="POST", headers=dict(headers), body=body.decode("utf-8"))
    found: dict[str, str] = {}
    retry_after = response.headers.get("retry-after")
    if retry_after is not None:
        found["retry-after"] = str(retry_after)
    return int(response.status), await response.text(), found


async def workers_http_post(
    url: str, headers: Mapping[str, str], body: bytes, timeout_s: float
) -> tuple[int, str, dict[str, str]]:
    """`HttpPost` over the Workers `fetch`: (HTTP status, response text, the headers a client
    acts on: Retry-After), whatever the status.

    Raises `TimeoutError` after `timeout_s`, and the runtime's error when the request fails.
    """
    return await asyncio.wait_for(_fetch_post(url, headers, body), timeout_s)


class EnvVars(Mapping[str, Any]):
    """The plain (string or number) vars and secrets on env, read lazily: building it costs
    nothing, and a lookup reads one attribute. Iterating lists the `VAR_NAMES` that are set."""

    def __init__(self, env: Any) -> None:
        self._lookup = _env_lookup(env)

    def __getitem__(self, name: str) -> Any:
        value = self._lookup(name)
        if value is None:
            raise KeyError(name)
        return value

    def __iter__(self) -> Iterator[str]:
        return (name for name in VAR_NAMES if self._lookup(name) is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def workers_rate_limit(binding: Any) -> RateLimit:
    """`RateLimit` over the rate-limit binding: `limit({key})` answers `{success}`."""

    async def limit(key: str) -> bool:
        from js import Object
        from pyodide.ffi import to_js

        outcome = await binding.limit(to_js({"key": key}, dict_converter=Object.fromEntries))
        # A raw JS object (the local host) or the SDK's converted dict (workerd).
        if hasattr(outcome, "to_py"):
            outcome = outcome.to_py()
        return bool(outcome.get("success", True)) if isinstance(outcome, dict) else bool(outcome)

    return limit


def workers_defer(work: Coroutine[Any, Any, None]) -> None:
    """`Defer` over the runtime's waitUntil: the task crosses to JS as a proxy, destroyed once
    it settles (as the SDK's own asgi adapter hands over background work)."""
    from pyodide.ffi import create_proxy
    from workers import wait_until

    task = asyncio.ensure_future(work)
    proxy = create_proxy(task)
    task.add_done_callback(lambda _: proxy.destroy())
    wait_until(proxy)


#: This isolate's parsed indexes: module state lives as long as the isolate, across requests.
_SNAPSHOTS = IndexSnapshots()


def bind(env: Any) -> Bindings:
    """Everything one request needs, built from that request's env (only the isolate's
    parsed indexes outlive it)."""
    db = getattr(env, "HISTORY", None)
    ai = getattr(env, "AI", None)
    writers = getattr(env, "USER_WRITER", None)
    http_post: HttpPost = workers_http_post
    return Bindings(
        kv=WorkersKV(env.ENTITIES),
        settings=Settings.from_env(_env_lookup(env)),
        db=None if db is None else WorkersD1(db),
        ai_run=None if ai is None else workers_ai_run(ai),
        http_post=http_post,
        vars=EnvVars(env),
        rate_limit=_lazy_rate_limit(env),
        writers=None if writers is None else durable_writers(writers),
        defer=workers_defer,
        snapshots=_SNAPSHOTS,
    )


def _lazy_rate_limit(env: Any) -> RateLimit:
    """The rate limiter, looked up only when a request's token needs it (the lookup costs a
    round trip on the local host, and most requests of an open or admin deployment skip it);
    no binding means no limit."""
    resolved: list[RateLimit | None] = []

    async def limit(key: str) -> bool:
        if not resolved:
            binding = getattr(env, "RATE_LIMITER", None)
            resolved.append(None if binding is None else workers_rate_limit(binding))
        check = resolved[0]
        return True if check is None else await check(key)

    return limit


def refuse_declared_too_large(request: Any) -> Any | None:
    """A 413 for a request whose declared `Content-Length` passes the body cap, or None.

    Checked before the SDK's ASGI bridge runs: the bridge reads the whole body into memory
    before the app (and its middleware's same check) sees the request."""
    if not declared_too_large(request.headers.get("content-length")):
        return None
    from workers import Response  # the Workers runtime only; imported on first use

    body = json.dumps({"error": {"code": "too_large", "message": TOO_LARGE_MESSAGE}})
    return Response(body, status=413, headers={"content-type": "application/json"})
