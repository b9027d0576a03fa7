"""The KV a write sees inside the user's writer: the writer's own table in front of KV.

Reads come from the table first (what the writer last wrote, exact; what it read from KV,
for a while), a document goes to KV and then to the table (so a crash between the two
leaves the table behind KV, never ahead: the retry writes it again), and the index key goes
to the table only: when KV gets it is the writer's (service/user_writer.py's `WriterState`,
which coalesces it to one KV write a second). The writer's state this needs is the
`WriterCopy` protocol below.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from entity_memory.domain.models import EntityIndex
from entity_memory.storage.kv import KVListPage, KVNamespace, check_put
from entity_memory.storage.local_table import LocalTable, Row

#: How long a document read from KV (not written here) is trusted before KV is asked again:
#: data written before the writer existed can still expire in KV.
KV_READ_TRUST_MS = 60 * 60 * 1000
INDEX_SUFFIX = ":entities"
INDEX_PREFIX = "index:"


@dataclass(frozen=True)
class HeldCopy:
    """The parsed index a writer keeps between requests; one read from KV (not written
    here) is trusted only until `trusted_until`, as its table row."""

    key: str
    index: EntityIndex
    trusted_until: int | None


def is_index_key(key: str) -> bool:
    return key.startswith(INDEX_PREFIX) and key.endswith(INDEX_SUFFIX)


class WriterCopy(Protocol):
    """What `WriterKV` reads and sets of its writer's state."""

    table: LocalTable
    clock: Callable[[], int]
    #: The table holds everything of the user (after an erasure): a missing key is absent.
    authoritative: bool
    #: The parsed index kept between requests.
    warm: HeldCopy | None
    #: Until when the index row last read is trusted (None: written here, exact).
    index_trusted_until: int | None

    def index_read(self, key: str, value: str | None) -> None: ...

    def index_changed(self, key: str, value: str | None) -> None: ...


class WriterKV:
    """The `KVNamespace` a write runs against inside the user's writer."""

    def __init__(self, writer: WriterCopy, inner: KVNamespace) -> None:
        self.writer, self.inner = writer, inner

    def _row(self, key: str) -> tuple[bool, str | None]:
        """(whether the table knows `key`, its stored text)."""
        row = self.writer.table.get(key)
        if row is None:
            return self.writer.authoritative, None
        if row.expires_at is not None and row.expires_at <= self.writer.clock():
            return False, None
        if is_index_key(key):
            self.writer.index_trusted_until = row.expires_at
        return True, row.value

    def _cached(self, key: str) -> tuple[bool, Any | None]:
        known, text = self._row(key)
        return known, None if text is None else json.loads(text)

    def _remember(self, key: str, value: Any | None) -> None:
        """Keep what KV answered for a key this writer has not written (for a while)."""
        self._remember_text(key, None if value is None else json.dumps(value))

    def _remember_text(self, key: str, doc: str | None) -> None:
        until = self.writer.clock() + KV_READ_TRUST_MS
        self.writer.table.put(key, Row(doc, until, None))
        if is_index_key(key):
            self.writer.index_trusted_until = until

    async def get_json(self, key: str) -> Any | None:
        raw = await self.get_text(key)
        return None if raw is None else json.loads(raw)

    async def get_text(self, key: str) -> str | bytes | None:
        known, text = self._row(key)
        if known:
            if is_index_key(key) and text is not None:
                self.writer.index_read(key, text)
            return text
        raw = await self.inner.get_text(key)
        self._remember_text(key, raw.decode() if isinstance(raw, bytes) else raw)
        return raw

    def warm_index(self, key: str) -> EntityIndex | None:
        """The index as this writer last read or wrote it, parsed (None: not held, read it).

        The writer is the only one to write its user's index, so the copy it parsed stays
        exact between requests; at 10k entries that saves parsing and validating ~4 MB of
        JSON per write. The caller gets its own entry list (it appends and replaces entries;
        a request that fails after changing an entry drops the copy, see `WriterState.run`).
        """
        held = self.writer.warm
        if held is None or held.key != key:
            return None
        if held.trusted_until is not None and held.trusted_until <= self.writer.clock():
            return None  # read from KV, not written here, and no longer trusted (as its row)
        self.writer.index_read(key, None)
        return held.index.model_copy(update={"entries": list(held.index.entries)})

    def keep_index(self, key: str, index: EntityIndex) -> None:
        """Hold `index`, just read from or written to `key`, for the next request."""
        self.writer.warm = HeldCopy(key, index, self.writer.index_trusted_until)

    async def get_json_many(self, keys: Sequence[str]) -> dict[str, Any | None]:
        out: dict[str, Any | None] = {}
        missing = []
        for key in keys:
            known, value = self._cached(key)
            if known:
                out[key] = value
            else:
                missing.append(key)
        if missing:
            fetched = await self.inner.get_json_many(missing)
            for key in missing:
                out[key] = fetched.get(key)
                self._remember(key, out[key])
        return {key: out[key] for key in keys}

    async def put(
        self,
        key: str,
        value: str,
        *,
        expiration_ttl: int | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        expires = None if expiration_ttl is None else self.writer.clock() + expiration_ttl * 1000
        meta = None if metadata is None else json.dumps(metadata)
        if is_index_key(key):
            # Checked here, where it is written: KV gets it later, from the writer's flush.
            # A document is checked once, by the KV it goes to (below).
            check_put(key, expiration_ttl, metadata)
            self.writer.table.put(key, Row(value, expires, meta))
            self.writer.warm = None  # until the writer says which parsed index this is
            self.writer.index_trusted_until = None  # written here: exact
            self.writer.index_changed(key, value)
            return
        # KV first, then the copy (see "Write order" in docs/consistency.md): the copy never
        # says a document is written that KV has not acknowledged.
        await self.inner.put(key, value, expiration_ttl=expiration_ttl, metadata=metadata)
        self.writer.table.put(key, Row(value, expires, meta))

    async def delete(self, key: str) -> None:
        if is_index_key(key):
            self.writer.table.put(key, Row(None, None, None))
            self.writer.warm = None
            self.writer.index_changed(key, None)
            return
        await self.inner.delete(key)
        self.writer.table.put(key, Row(None, None, None))

    async def list(
        self, *, prefix: str = "", limit: int = 1000, cursor: str | None = None
    ) -> KVListPage:
        return await self.inner.list(prefix=prefix, limit=limit, cursor=cursor)
