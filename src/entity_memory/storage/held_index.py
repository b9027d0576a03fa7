"""The seams a store may be given inside the user's writer, as explicit protocols.

Outside the writer a store reads KV and parses the index on every request. Inside it, the
writer holds the index it last read or wrote, parsed (`HeldIndex`), and what KV itself holds
can differ from the writer's own copy (`replica`): a repair or an expiry check must look at KV.
A store is told about both when it is built (`service.stores.build_store`), never by probing.
"""

from __future__ import annotations

from typing import Protocol

from entity_memory.domain.models import EntityIndex


class HeldIndex(Protocol):
    """The parsed index a writer keeps between requests."""

    def warm_index(self, key: str) -> EntityIndex | None:
        """The index held for `key`, as the caller's own copy (None: not held, read it)."""
        ...

    def keep_index(self, key: str, index: EntityIndex) -> None:
        """Hold `index`, just read from or written to `key`, for the next request."""
        ...
