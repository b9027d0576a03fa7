"""The slice of Workers KV the core uses, as a protocol, plus an in-memory twin.

The core talks to KV only through `KVNamespace`, so the same store runs inside the Worker (an
adapter over the JS binding), on the local host, and under CPython with `InMemoryKV`.
`InMemoryKV` copies the Workers KV rules that matter for correctness (TTL floor, metadata cap,
bulk-get cap, sorted paged listing, expiry), so a test that passes on it does not rely on
behaviour production lacks. `CountingKV` wraps any namespace and counts billed operations.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

# Limits of Workers KV (developers.cloudflare.com/kv/platform/limits).
MAX_KEY_BYTES = 512
MAX_METADATA_BYTES = 1024
MAX_BULK_GET_KEYS = 100
MAX_LIST_LIMIT = 1000
MIN_EXPIRATION_TTL = 60


class KVError(Exception):
    """A request that Workers KV itself would refuse."""


@dataclass(frozen=True)
class KVListKey:
    name: str
    expiration: int | None = None  # epoch seconds, as KV reports it
    metadata: dict[str, Any] | None = None


@dataclass(frozen=True)
class KVListPage:
    keys: list[KVListKey]
    list_complete: bool
    cursor: str | None = None


class KVNamespace(Protocol):
    """What the core needs from a KV namespace. Values are JSON documents."""

    async def get_json(self, key: str) -> Any | None: ...

    async def get_text(self, key: str) -> str | bytes | None:
        """The stored document unparsed, for a caller that parses it itself: pydantic's JSON
        parser validates as it reads, which for the 10k-entry index takes a third less time
        than `json.loads` and validating the result."""
        ...

    async def get_json_many(self, keys: Sequence[str]) -> dict[str, Any | None]:
        """One bulk read of at most `MAX_BULK_GET_KEYS` keys; missing keys map to None."""
        ...

    async def put(
        self,
        key: str,
        value: str,
        *,
        expiration_ttl: int | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None: ...

    async def delete(self, key: str) -> None: ...

    async def list(
        self, *, prefix: str = "", limit: int = MAX_LIST_LIMIT, cursor: str | None = None
    ) -> KVListPage: ...


def check_put(key: str, expiration_ttl: int | None, metadata: dict[str, Any] | None) -> None:
    """Refuse what Workers KV refuses, so no caller finds out only in production."""
    if not key or len(key.encode()) > MAX_KEY_BYTES:
        raise KVError(f"key must be 1..{MAX_KEY_BYTES} bytes")
    if expiration_ttl is not None and expiration_ttl < MIN_EXPIRATION_TTL:
        raise KVError(f"expiration_ttl must be at least {MIN_EXPIRATION_TTL} seconds")
    if metadata is not None and len(json.dumps(metadata).encode()) > MAX_METADATA_BYTES:
        raise KVError(f"metadata must serialise to at most {MAX_METADATA_BYTES} bytes")


@dataclass
class _Item:
    value: str
    expires_at_ms: int | None
    metadata: dict[str, Any] | None


def _wall_clock_ms() -> int:
    import time

    return int(time.time() * 1000)


@dataclass
class InMemoryKV:
    """Workers KV semantics in a dict, with an injectable clock (epoch ms) for expiry tests."""

    clock: Callable[[], int] = _wall_clock_ms
    _items: dict[str, _Item] = field(default_factory=dict)

    def _live(self, key: str) -> _Item | None:
        item = self._items.get(key)
        if item is None:
            return None
        if item.expires_at_ms is not None and item.expires_at_ms <= self.clock():
            del self._items[key]
            return None
        return item

    async def get_json(self, key: str) -> Any | None:
        item = self._live(key)
        return None if item is None else json.loads(item.value)

    async def get_text(self, key: str) -> str | None:
        item = self._live(key)
        return None if item is None else item.value

    async def get_json_many(self, keys: Sequence[str]) -> dict[str, Any | None]:
        if len(keys) > MAX_BULK_GET_KEYS:
            raise KVError(f"bulk get takes at most {MAX_BULK_GET_KEYS} keys")
        return {key: await self.get_json(key) for key in keys}

    async def get_with_metadata(self, key: str) -> tuple[Any | None, dict[str, Any] | None]:
        """A key's value and metadata: for tests that inspect what was stored (the core reads
        metadata only through `list`)."""
        item = self._live(key)
        if item is None:
            return None, None
        return json.loads(item.value), item.metadata

    async def put(
        self,
        key: str,
        value: str,
        *,
        expiration_ttl: int | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        check_put(key, expiration_ttl, metadata)
        expires = None if expiration_ttl is None else self.clock() + expiration_ttl * 1000
        meta = None if metadata is None else json.loads(json.dumps(metadata))
        self._items[key] = _Item(value, expires, meta)

    async def delete(self, key: str) -> None:
        self._items.pop(key, None)

    async def list(
        self, *, prefix: str = "", limit: int = MAX_LIST_LIMIT, cursor: str | None = None
    ) -> KVListPage:
        limit = max(1, min(limit, MAX_LIST_LIMIT))
        names = sorted(k for k in list(self._items) if k.startswith(prefix) and self._live(k))
        if cursor:
            names = [n for n in names if n > cursor]
        page = names[:limit]
        complete = len(names) <= limit
        keys = [
            KVListKey(
                name=n,
                expiration=None
                if self._items[n].expires_at_ms is None
                else self._items[n].expires_at_ms // 1000,
                metadata=self._items[n].metadata,
            )
            for n in page
        ]
        return KVListPage(keys=keys, list_complete=complete, cursor=None if complete else page[-1])

    def expiration_of(self, key: str) -> int | None:
        """Epoch seconds at which `key` expires (a test hook; KV shows this through list)."""
        item = self._live(key)
        return None if item is None or item.expires_at_ms is None else item.expires_at_ms // 1000


@dataclass
class CountingKV:
    """Counts the operations KV bills for, by kind, around any namespace."""

    inner: KVNamespace
    ops: Counter[str] = field(default_factory=Counter)
    keys_read: Counter[str] = field(default_factory=Counter)
    keys_written: Counter[str] = field(default_factory=Counter)

    @property
    def reads(self) -> int:
        return self.ops["get"] + self.ops["get_bulk"]

    @property
    def writes(self) -> int:
        return self.ops["put"] + self.ops["delete"]

    def summary(self) -> str:
        return ",".join(f"{k}={v}" for k, v in sorted(self.ops.items()))

    async def get_json(self, key: str) -> Any | None:
        self.ops["get"] += 1
        self.keys_read[key] += 1
        return await self.inner.get_json(key)

    async def get_text(self, key: str) -> str | bytes | None:
        self.ops["get"] += 1
        self.keys_read[key] += 1
        return await self.inner.get_text(key)

    async def get_json_many(self, keys: Sequence[str]) -> dict[str, Any | None]:
        self.ops["get_bulk"] += 1
        for key in keys:
            self.keys_read[key] += 1
        return await self.inner.get_json_many(keys)

    async def put(
        self,
        key: str,
        value: str,
        *,
        expiration_ttl: int | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        self.ops["put"] += 1
        self.keys_written[key] += 1
        await self.inner.put(key, value, expiration_ttl=expiration_ttl, metadata=metadata)

    async def delete(self, key: str) -> None:
        self.ops["delete"] += 1
        self.keys_written[key] += 1
        await self.inner.delete(key)

    async def list(
        self, *, prefix: str = "", limit: int = MAX_LIST_LIMIT, cursor: str | None = None
    ) -> KVListPage:
        self.ops["list"] += 1
        return await self.inner.list(prefix=prefix, limit=limit, cursor=cursor)
