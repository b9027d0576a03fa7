"""Semantic neighbours for entity resolution: a new mention that *means* a stored entity
("reports take too long" vs a pain point "Slow reporting") merges as its alias.

Only for the descriptive types, pain points and preferences, whose names are descriptions.
Campaigns and metrics are identifiers: "Brand - Exact" and "Brand - Broad", or "Alpha CPA" and
"Bravo CPA", are close in any embedding space and still different things, so they resolve
lexically only. Decisions are events: two similar decisions on different days are two.

A merge by meaning also needs the type's keys to agree, read from the stored facts: a
preference's category ("no tests on the wedding range", risk, is never "one-page monthly
report", reporting), a pain point's related campaigns where both name some; a neighbour whose
facts were not read is not merged by meaning. And a neighbour the model was shown (its name
was in the prompt's known entities) is never one: a model that saw the name and chose another
meant another thing.

Similarity is the estimated cosine of the vectors *centred* on the user's mean vector: raw
cosines of one model crowd together (0.75-0.95 for e5, related or not), centred ones spread
out (a paraphrase ~0.5, an unrelated entry ~0). A neighbour must reach NEIGHBOUR_COSINE, beat
the runner-up by NEIGHBOUR_MARGIN and agree on every KPI, number and channel in the names.
One batched embedding call per extraction; none when embeddings are off or the index has no
vectors of this model.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from entity_memory.domain.kind import is_kind, kind_of
from entity_memory.domain.kinds import PAIN_POINT, PREFERENCE
from entity_memory.domain.models import EntityIndex, EntityInputBase, IndexEntry
from entity_memory.domain.text import normalize_name
from entity_memory.embeddings.embedder import Embedder
from entity_memory.embeddings.vectors import (
    MIN_ENTRIES_FOR_SEMANTIC,
    QueryPlanes,
    centred,
    unpack_signs,
)
from entity_memory.extraction.resolve import compatible_names

#: The types resolved by meaning as well as by name.
#: Centred cosine a neighbour must reach (measured on hand-written paraphrase pairs).
NEIGHBOUR_COSINE = 0.35
#: How much closer (centred cosine) the neighbour must be than the next entry.
NEIGHBOUR_MARGIN = 0.15


def mention_text(item: EntityInputBase) -> str:
    return f"{item.type.replace('_', ' ')}: {item.name}. {item.content}"  # type: ignore[attr-defined]


def _names(values: object) -> set[str]:
    return {normalize_name(str(v)) for v in values} if isinstance(values, list) else set()


def keys_agree(item: EntityInputBase, facts: Mapping[str, Any] | None) -> bool:
    """The item and a stored entity's facts (its metadata) agree on the type's keys."""
    if facts is None:
        return False
    meta = item.metadata.to_json_dict()  # type: ignore[attr-defined]
    if item.type == PREFERENCE.type:  # type: ignore[attr-defined]
        return meta.get("category") == facts.get("category")
    if item.type == PAIN_POINT.type:  # type: ignore[attr-defined]
        mine, theirs = _names(meta.get("relatedCampaigns")), _names(facts.get("relatedCampaigns"))
        return not (mine and theirs) or bool(mine & theirs)
    return True


async def semantic_neighbours(
    embedder: Embedder | None,
    index: EntityIndex,
    items: Sequence[EntityInputBase],
    facts: Mapping[tuple[str, str], Mapping[str, Any]] | None = None,
    shown: Collection[tuple[str, str]] = (),
) -> list[IndexEntry | None]:
    """For each item, the stored entity it means (or None), aligned with `items`.

    `facts`: stored metadata by (type, id), for the keys (None: not checked, callers outside
    the pipeline); `shown`: the entities the model saw by name, never a neighbour."""
    out: list[IndexEntry | None] = [None] * len(items)
    if embedder is None or index.vector_model != embedder.model.name:
        return out
    by_type: dict[str, list[tuple[IndexEntry, int]]] = {}
    for entry in index.entries:
        if entry.vec and is_kind(entry.type) and kind_of(entry.type).resolved_semantically:
            by_type.setdefault(entry.type, []).append((entry, unpack_signs(entry.vec)))
    wanted = [
        i
        for i, item in enumerate(items)
        if len(by_type.get(item.type, ())) >= MIN_ENTRIES_FOR_SEMANTIC  # type: ignore[attr-defined]
    ]
    if not wanted:
        return out
    vectors = await embedder.try_embed([mention_text(items[i]) for i in wanted], "passage")
    if not vectors:
        return out
    for i, vector in zip(wanted, vectors, strict=True):
        item = items[i]
        planes = QueryPlanes.of(centred(vector, index.vector_center))
        scored = sorted(
            ((planes.cosine(signs), entry) for entry, signs in by_type[item.type]),  # type: ignore[attr-defined]
            key=lambda pair: -pair[0],
        )
        entry = _standing_out(item, scored)
        if entry is None or (entry.type, entry.id) in shown:
            continue
        if facts is None or keys_agree(item, facts.get((entry.type, entry.id))):
            out[i] = entry
    return out


def _standing_out(
    item: EntityInputBase, scored: Sequence[tuple[float, IndexEntry]]
) -> IndexEntry | None:
    best, entry = scored[0]
    runner_up = scored[1][0] if len(scored) > 1 else -1.0
    if best < NEIGHBOUR_COSINE or best - runner_up < NEIGHBOUR_MARGIN:
        return None
    return entry if compatible_names(item.name, entry.name) else None  # type: ignore[attr-defined]
