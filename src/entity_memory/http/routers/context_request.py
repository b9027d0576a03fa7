"""The `<entity_memory>` block a new session puts in its prompt."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from entity_memory.http.deps import ExpiredReportDep, StoreDep, UserId
from entity_memory.http.schemas import ContextBody, ContextResponse
from entity_memory.service.context_block import context_block
from entity_memory.service.retrieval import Retrieval, retrieve_for_context

router = APIRouter(tags=["context"])


@router.post(
    "/v1/users/{user_id}/context",
    response_model=ContextResponse,
    response_model_exclude_unset=True,
)
async def context(
    user_id: UserId, body: ContextBody, store: StoreDep, report: ExpiredReportDep
) -> dict[str, Any]:
    """The `<entity_memory>` block for a task, with the entities in rank order."""
    found = await retrieve_for_context(store, user_id, body.task, body.limit, report_expired=report)
    docs = [e.to_json_dict() for e in found.entities]
    result: dict[str, Any] = {
        "context": context_block(found, body.task, body.max_tokens),
        "entities": docs,
        "ranking": _ranking(found),
    }
    if body.explain:
        result["scores"] = [s.to_json_dict() for s in found.scores]
    return result


def _ranking(found: Retrieval) -> dict[str, Any]:
    """Whether the semantic channel took part, and when not, why (it degrades, never fails);
    how many entities were relevant to the task, and when none was, what came instead."""
    out: dict[str, Any] = {"semantic": found.lexical_reason is None, "relevant": found.relevant}
    if found.lexical_reason is not None:
        out["lexicalReason"] = found.lexical_reason
    if found.fallback is not None:
        out["fallback"] = found.fallback
    return out
