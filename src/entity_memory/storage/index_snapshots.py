"""Parsing the index, and the parsed indexes kept between the requests of one isolate.

A Worker isolate serves many requests, and an agent asks for context on every turn. At 10k
entries, parsing and validating the ~3-5 MB index is most of a context request's CPU
(bench/bench_pyodide.py). KV is still read every time, and a kept copy is used only when KV
answers with exactly the bytes it was parsed from, so a reader can never see an older index
than KV gives it. Only the parse is saved.

What is kept is bounded by the bytes it was parsed from. When a request parses a new text,
the copies that would go over the bound are dropped before it parses, so a request's peak
memory stays what it was without the cache, with at most `SNAPSHOT_BYTES_MAX` of other
users' copies. The copies are shared, so callers must not change them: see
`EntityStore.read_index_shared`.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TypeVar

from pydantic import ValidationError

from entity_memory.domain.models import EntityIndex, RankIndex
from entity_memory.storage.kv import KVNamespace

logger = logging.getLogger(__name__)

#: The raw index text an isolate keeps parsed across requests (Workers give an isolate
#: 128 MB; a 10k-entry index with vectors is ~4.7 MB of text and ~20 MB parsed).
SNAPSHOT_BYTES_MAX = 6 * 2**20


Parsed = TypeVar("Parsed", EntityIndex, RankIndex)


def _parse(model: type[Parsed], user_id: str, raw: str | bytes) -> Parsed:
    """The index from KV's bytes: pydantic parses and validates in one pass, a third faster
    at 10k entries than `json.loads` and validating the result."""
    try:
        return model.model_validate_json(raw)
    except ValidationError:
        # The entities are intact; an unreadable index is rebuilt by reindex, not trusted.
        logger.error("index of %s does not validate; treating it as empty", user_id)
        return model()


def parse_index(user_id: str, raw: str | bytes) -> EntityIndex:
    """The whole index, as the writer keeps and rewrites it."""
    return _parse(EntityIndex, user_id, raw)


def parse_rank_index(user_id: str, raw: str | bytes) -> RankIndex:
    """What a context request reads of the index (`RankIndex`)."""
    return _parse(RankIndex, user_id, raw)


@dataclass(frozen=True)
class _Snapshot:
    raw: bytes | str
    index: RankIndex


@dataclass
class IndexSnapshots:
    """One isolate's parsed indexes by KV key, most recently used last."""

    max_bytes: int = SNAPSHOT_BYTES_MAX
    _held: OrderedDict[str, _Snapshot] = field(default_factory=OrderedDict)
    hits: int = 0
    misses: int = 0

    async def read(self, kv: KVNamespace, key: str, user_id: str) -> RankIndex:
        """The index KV holds at `key`, parsed unless kept from the same bytes."""
        raw = await kv.get_text(key)
        if raw is None:
            self.forget(key)
            return RankIndex()
        kept = self.find(key, raw)
        if kept is not None:
            return kept
        self.make_room(key, len(raw))
        index = parse_rank_index(user_id, raw)
        if index.entries:  # an unreadable index is not kept: reindex may repair it
            self.keep(key, raw, index)
        return index

    def find(self, key: str, raw: bytes | str) -> RankIndex | None:
        """The index parsed from exactly `raw` for `key`, if kept."""
        snapshot = self._held.get(key)
        if snapshot is None or snapshot.raw != raw:
            self.misses += 1
            return None
        self.hits += 1
        self._held.move_to_end(key)
        return snapshot.index

    def make_room(self, key: str, size: int) -> None:
        """Before parsing `size` new bytes for `key`: drop its old copy, then the least
        recently used others until the new one fits."""
        self._held.pop(key, None)
        while self._held and self.held_bytes() + size > self.max_bytes:
            self._held.popitem(last=False)

    def keep(self, key: str, raw: bytes | str, index: RankIndex) -> None:
        if len(raw) > self.max_bytes:
            return
        self.make_room(key, len(raw))
        self._held[key] = _Snapshot(raw, index)

    def forget(self, key: str) -> None:
        self._held.pop(key, None)

    def held_bytes(self) -> int:
        return sum(len(s.raw) for s in self._held.values())
