"""Stage 2, extract: the extractor over each planned range, with what is already known.

Which extractor: the one the request names, else the deployment's (registry.py). An LLM sees
the messages before a range as read-only context and the most relevant known entities with
their current facts; an extractor that fails outright fails its whole range (recorded as
pending by the ledger stage), and the other ranges' candidates are kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from entity_memory.domain.keys import entity_key
from entity_memory.domain.kinds import PAIN_POINT, PREFERENCE
from entity_memory.domain.models import IndexEntry, parse_entity
from entity_memory.domain.ranking import score_entries
from entity_memory.extraction.base import (
    ChunkFailure,
    ExtractionError,
    ExtractionResult,
    Extractor,
    ExtractorUnavailable,
    KnownEntity,
    Message,
    Usage,
)
from entity_memory.extraction.registry import (
    EXTRACTORS,
    LLM_EXTRACTORS,
    ExtractorFactory,
    configured_extractor,
)
from entity_memory.service.bindings import Bindings
from entity_memory.service.extraction.ports import SessionStore
from entity_memory.service.extraction.request_errors import ExtractionRequestError
from entity_memory.service.extraction.stage_data import Extracted, Known, Plan

#: Known entities whose current facts are read for an LLM's context (one bulk KV read).
KNOWN_WITH_FACTS = 100
#: Types whose entities are read first, most recent first (at most STANDING_WITH_FACTS): the
#: model is shown every open pain point and preference (extraction/llm/chat.rank_known), and
#: whether a pain point is open is in its facts.
STANDING_TYPES = frozenset({PAIN_POINT.type, PREFERENCE.type})
STANDING_WITH_FACTS = 40


def choose_extractor(requested: str | None, bindings: Bindings) -> str:
    if requested is not None:
        if requested not in EXTRACTORS:
            raise ExtractionRequestError(
                "invalid_extractor",
                f"unknown extractor {requested!r}; one of {', '.join(EXTRACTORS)}",
            )
        return requested
    try:
        return configured_extractor(bindings)
    except ValueError as exc:  # a bad EXTRACTOR / LLM_* var
        raise ExtractionRequestError("extractor_misconfigured", str(exc)) from exc


def build_extractor(
    factory: ExtractorFactory, name: str, bindings: Bindings, requested: bool
) -> Extractor:
    try:
        return factory(name, bindings)
    except ExtractorUnavailable as exc:
        code = "extractor_unavailable" if requested else "extractor_misconfigured"
        raise ExtractionRequestError(code, str(exc)) from exc
    except ValueError as exc:
        raise ExtractionRequestError("extractor_misconfigured", str(exc)) from exc


async def known_entities(
    store: SessionStore, user_id: str, text: str, now: int, with_facts: bool
) -> Known:
    """Every index entry as a known entity; for an LLM, the most relevant ones to the
    conversation also carry their current facts (one bulk read)."""
    index = await store.read_index(user_id)
    facts = await _current_facts(store, user_id, index.entries, text, now) if with_facts else {}
    entities = [
        KnownEntity(e.type, e.id, e.name, tuple(e.aliases), facts.get((e.type, e.id), {}), entry=e)
        for e in index.entries
    ]
    return Known(index=index, entities=entities)


async def _current_facts(
    store: SessionStore, user_id: str, entries: Sequence[IndexEntry], text: str, now: int
) -> dict[tuple[str, str], dict[str, Any]]:
    if not entries:
        return {}
    standing = sorted(
        (e for e in entries if e.type in STANDING_TYPES), key=lambda e: -e.updated_at
    )[:STANDING_WITH_FACTS]
    wanted = {(e.type, e.id) for e in standing}
    top = [s for s in score_entries(entries, text, now) if (s.type, s.id) not in wanted]
    chosen = [(e.type, e.id) for e in standing]
    chosen += [(s.type, s.id) for s in top[: KNOWN_WITH_FACTS - len(chosen)]]
    keys = [entity_key(user_id, t, i) for t, i in chosen]
    facts: dict[tuple[str, str], dict[str, Any]] = {}
    for data in (await store.kv.get_json_many(keys)).values():
        if data is None:
            continue
        try:
            entity = parse_entity(data)
        except ValueError:
            continue
        facts[(entity.type, entity.id)] = entity.to_json_dict().get("metadata", {})
    return facts


async def extract(
    extractor: Extractor,
    messages: Sequence[Message],
    plan: Plan,
    known: Sequence[KnownEntity],
    now: int,
) -> Extracted:
    """Every planned range, in order; failures are shifted to positions in the session."""
    candidates: list[dict[str, Any]] = []
    rejected: list[dict[str, Any]] = []
    failures: list[ChunkFailure] = []
    usage, calls, truncated = Usage(), 0, 0
    shown: set[tuple[str, str]] = set()
    for start, end in plan.ranges:
        part = await _extract_range(extractor, list(messages), start, end, list(known), now)
        candidates += part.candidates
        rejected += part.rejected
        failures += [ChunkFailure(start + f.start, start + f.end, f.reason) for f in part.failures]
        if part.usage is not None:
            usage.add(part.usage)
        calls += part.calls
        truncated += part.truncated
        shown |= part.shown
    return Extracted(
        extractor=plan.extractor,
        candidates=candidates,
        rejected=rejected,
        failures=failures,
        usage=usage,
        calls=calls,
        truncated=truncated,
        shown=shown,
    )


async def _extract_range(
    extractor: Any,
    messages: list[Message],
    start: int,
    end: int,
    known: list[KnownEntity],
    now: int,
) -> ExtractionResult:
    try:
        if extractor.name in LLM_EXTRACTORS:
            return await extractor.extract(
                messages[start:end], known, now, previous=messages[:start]
            )
        return await extractor.extract(messages[start:end], known, now)
    except ExtractionError as exc:
        return ExtractionResult(
            extractor=extractor.name, failures=[ChunkFailure(0, end - start, str(exc))]
        )
