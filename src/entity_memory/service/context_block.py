"""The `<entity_memory>` block for a retrieval: what the context route answers and what the
retrieval bench measures, so both read the same block."""

from __future__ import annotations

from entity_memory.domain.context import assemble_entity_context
from entity_memory.service.retrieval import Retrieval


def context_block(found: Retrieval, task: str, max_tokens: int) -> str:
    """The block for `found`, in its rank order, under `max_tokens`."""
    links = {f"{kind}:{entity_id}": ids for (kind, entity_id), ids in found.links.items()}
    return assemble_entity_context(found.entities, max_tokens, task, links, found.addresses)
