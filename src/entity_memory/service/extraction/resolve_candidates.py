"""Stage 4, resolve: each checked candidate onto what is stored (extraction/resolve.py by name,
alias, campaign id or fuzzy match; service/semantic_resolve.py by meaning, as a mention only),
stamped with the extractor in its provenance, and a novelty adjustment for the upsert."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from entity_memory.domain.kind import kind_of
from entity_memory.domain.kinds import DECISION, PAIN_POINT, PREFERENCE
from entity_memory.domain.models import (
    BaseEntity,
    EntityIndex,
    EntityInputBase,
    IndexEntry,
    ProvenanceInput,
)
from entity_memory.domain.text import normalize_name, tokenize
from entity_memory.embeddings.embedder import Embedder
from entity_memory.extraction.base import KnownEntity
from entity_memory.extraction.resolve import Resolver
from entity_memory.service.semantic_resolve import semantic_neighbours

#: Importance taken off a mention that adds nothing to what is stored (SPEC: novelty).
REPEAT_PENALTY = 0.15


def with_provenance(item: EntityInputBase, extractor: str) -> EntityInputBase:
    """Stamp the extractor on the item's provenance (one entry from its `source` if none)."""
    entries = list(item.provenance) or [ProvenanceInput(excerpt=item.source or "")]
    stamped = [e.model_copy(update={"extractor": e.extractor or extractor}) for e in entries]
    return item.model_copy(update={"provenance": stamped})


def novelty(old: BaseEntity | None, item: EntityInputBase) -> EntityInputBase:
    """A mention that only repeats what is stored is worth less than new information. An
    item that states no importance (one the stages made, a carried reading) gives no opinion
    to lower: the merge keeps the stored importance."""
    if old is None or "importance" not in item.model_fields_set:
        return item
    if set(tokenize(item.content)) <= set(tokenize(old.content)):
        return item.model_copy(update={"importance": max(0.0, item.importance - REPEAT_PENALTY)})
    return item


async def resolve(
    inputs: Sequence[EntityInputBase],
    index: EntityIndex,
    embedder: Embedder | None,
    extractor: str,
    known: Sequence[KnownEntity] = (),
    shown: Collection[tuple[str, str]] = (),
) -> list[EntityInputBase]:
    """`known`: the known entities with the facts read for a model (a merge by meaning then
    needs the type's keys to agree with them; without them, as for the rules, which are
    shown no facts, names and meaning decide); `shown`: those a model saw by name."""
    resolver = Resolver(index.entries)
    facts = {(k.type, k.id): k.facts for k in known if k.facts} if known else None
    near = await semantic_neighbours(embedder, index, list(inputs), facts, shown)
    acted = _by_action(index, facts or {})
    out: list[EntityInputBase] = []
    for item, neighbour in zip(inputs, near, strict=True):
        lexical = resolver.find_lexically(item)
        same = None if lexical is not None else acted.get(_action_of(item))
        if same is not None:
            resolved, _ = resolver.resolve(item, same)
            out.append(with_provenance(resolved, extractor))
            continue
        by_meaning = neighbour is not None and lexical is None
        stored = facts.get((neighbour.type, neighbour.id)) if facts and neighbour else None
        if by_meaning and facts is not None and not restates(item, stored):
            by_meaning, neighbour = False, None  # another subject: a new entity
        resolved, entry = resolver.resolve(item, neighbour)
        if by_meaning and entry is not None:
            resolved = mention_only(resolved, stored)
        if entry is not None:
            resolved = one_return(resolved)
        out.append(with_provenance(resolved, extractor))
    return out


def one_return(item: EntityInputBase) -> EntityInputBase:
    """A stored problem raised again counts one more occurrence, whatever count the reply
    gives: a model that sees it known often reports a running total ("3" the third session),
    which the merge's sum would count again (1 + 2 + 3 for three sessions)."""
    meta = item.metadata  # type: ignore[attr-defined]
    if not kind_of(item.type).counts_returns or getattr(meta, "frequency", 1) <= 1:  # type: ignore[attr-defined]
        return item
    return item.model_copy(update={"metadata": meta.model_copy(update=dict(frequency=1))})


def _action_of(item: EntityInputBase) -> str:
    """A decision's action as compared (normalised), "" for anything else."""
    if item.type != DECISION.type:  # type: ignore[attr-defined]
        return ""
    return normalize_name(str(getattr(item.metadata, "action", "") or ""))  # type: ignore[attr-defined]


def _by_action(
    index: EntityIndex, facts: Mapping[tuple[str, str], Mapping[str, Any]]
) -> dict[str, IndexEntry]:
    """The known decisions by their action as read for the model: a decision sent under a
    new name with the very action of a stored one is that decision (a model reporting its
    outcome, "the freeze is over", names it anew), not a second one. The action is the
    decision's key; two decisions with one action taken are one."""
    entries = {(e.type, e.id): e for e in index.entries}
    out: dict[str, IndexEntry] = {}
    for key, fact in facts.items():
        action = normalize_name(str(fact.get("action") or ""))
        if key[0] == DECISION.type and action and key in entries:
            out.setdefault(action, entries[key])
    return out


def restates(item: EntityInputBase, stored: Mapping[str, Any] | None) -> bool:
    """A preference found by meaning says what the stored one says (the words of one value
    are all in the other): else it is another subject, and merging it would replace the
    stored one's value ("a one-page monthly recap" is not "only bookings and cost per
    booking", both reporting). Other types: a recurrence, always a mention."""
    if item.type != PREFERENCE.type:  # type: ignore[attr-defined]
        return True
    if stored is None:
        return False
    mine = set(tokenize(str(item.metadata.value)))  # type: ignore[attr-defined]
    theirs = set(tokenize(str(stored.get("value") or "")))
    return bool(mine and theirs) and (mine <= theirs or theirs <= mine)


def mention_only(item: EntityInputBase, stored: Mapping[str, Any] | None) -> EntityInputBase:
    """A candidate resolved by meaning alone, as a mention of the stored entity: it adds its
    name as an alias, its excerpt, a recurrence, never another subject's content or state.
    Its sentence is dropped (the stored one stays), a preference keeps the stored category
    and value where they were read, and a pain point says nothing of its severity or whether
    it is resolved: a change of state comes under the entity's own name (the prompt asks a
    model for that), not through a look-alike."""
    meta = item.metadata  # type: ignore[attr-defined]
    data = meta.model_dump(by_alias=True, exclude_unset=True)
    if item.type == PREFERENCE.type and stored is not None:  # type: ignore[attr-defined]
        data.update({k: stored[k] for k in ("category", "value") if stored.get(k) is not None})
    elif item.type == PAIN_POINT.type:  # type: ignore[attr-defined]
        data = {k: v for k, v in data.items() if k in ("relatedCampaigns", "frequency")}
    return item.model_copy(update={"content": "", "metadata": type(meta).model_validate(data)})
