"""The Worker side of the core's bindings: Workers KV and D1 behind the core's protocols.

This is the only module besides entry.py that knows about the Workers runtime. It expects the
env as the SDK hands it to a `WorkerEntrypoint` (`self.env`, an `_EnvWrapper`), where a
`KvNamespace` binding already converts Python arguments to JS (dicts become objects, None
becomes null) and JS results to Python (objects become dicts, a Map becomes a dict).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from entity_memory.config import Bindings, Settings
from entity_memory.kv import (
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
    compares, serialises and stores these, so hand it ordinary dicts and lists.
    """
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


class WorkersKV:
    """`entity_memory.kv.KVNamespace` over a Workers KV binding.

    Requests KV would refuse are refused here first with the same `KVError` as `InMemoryKV`,
    so the core sees one error type whichever namespace it runs on.
    """

    def __init__(self, binding: Any) -> None:
        self._kv = binding

    async def get_json(self, key: str) -> Any | None:
        return _plain(await self._kv.get(key, "json"))

    async def get_json_many(self, keys: Sequence[str]) -> dict[str, Any | None]:
        if not keys:
            return {}
        if len(keys) > MAX_BULK_GET_KEYS:
            raise KVError(f"bulk get takes at most {MAX_BULK_GET_KEYS} keys")
        # One bulk read (at most 100 keys, enforced by KV itself); the JS Map it returns has
        # an entry, possibly null, for every requested key.
        found = await self._kv.get(list(keys), "json")
        found = _plain(found) if found is not None else {}
        return {key: found.get(key) for key in keys}

    async def get_with_metadata(self, key: str) -> tuple[Any | None, dict[str, Any] | None]:
        result = await self._kv.getWithMetadata(key, "json")
        if result is None:
            return None, None
        result = _plain(result)
        return result.get("value"), result.get("metadata")

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


class WorkersD1:
    """`entity_memory.d1.D1Database` over a D1 binding (`prepare().bind().all()`, `batch`)."""

    def __init__(self, binding: Any) -> None:
        self._db = binding

    def _statement(self, sql: str, params: Sequence[Any]) -> Any:
        prepared = self._db.prepare(sql)
        return prepared.bind(*params) if params else prepared

    async def all(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        result = _plain(await self._statement(sql, params).all())
        return list(result.get("results") or [])

    async def batch(
        self, statements: Sequence[tuple[str, Sequence[Any]]]
    ) -> list[list[dict[str, Any]]]:
        # D1 runs a batch as one transaction: all statements apply, or none.
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


def bind(env: Any) -> Bindings:
    """Everything one request needs, built from that request's env (nothing is cached)."""
    db = getattr(env, "HISTORY", None)
    return Bindings(
        kv=WorkersKV(env.ENTITIES),
        settings=Settings.from_env(_env_lookup(env)),
        db=None if db is None else WorkersD1(db),
    )
