"""The one place a store is made: KV, settings, clock, ledger and the embedder together.

Routes (http/deps.py), the cron's reindex and pending retries, and the user's writer all
build their store here, so none of them forgets the embedder or the writer's held index.
"""

from __future__ import annotations

from entity_memory.embeddings.embedder import build_embedder
from entity_memory.service.bindings import Bindings
from entity_memory.storage.ledger import Ledger
from entity_memory.storage.store import EntityStore


def build_store(bindings: Bindings, ledger: Ledger | None = None) -> EntityStore:
    """The store a request (or a scheduled run) works with. Inside the user's writer, the
    bindings carry the writer's held index and KV itself (the replica) beside its copy."""
    embedder = build_embedder(bindings.settings.embedding_model, bindings.ai_run)
    return EntityStore(
        bindings.kv,
        bindings.settings,
        bindings.clock,
        ledger,
        embedder=embedder,
        held=bindings.held_index,
        replica=bindings.replica,
        snapshots=bindings.snapshots,
    )


def build_ledger(bindings: Bindings) -> Ledger | None:
    return None if bindings.db is None else Ledger(bindings.db)
