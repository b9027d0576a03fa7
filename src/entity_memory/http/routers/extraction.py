"""Session extraction: a conversation in, its entities upserted."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from pydantic import ValidationError

from entity_memory.domain.keys import validate_id
from entity_memory.extraction.base import Message
from entity_memory.extraction.registry import ExtractorFactory
from entity_memory.http.body import openapi_body, parse, read_json
from entity_memory.http.deps import (
    BindingsDep,
    OptionalLedgerDep,
    StoreDep,
    UserId,
    extractor_factory,
)
from entity_memory.http.errors import ApiError, pydantic_details
from entity_memory.http.schemas import ExtractBody, ExtractResponse
from entity_memory.service.extract_session import SessionExtraction, transcript_to_messages
from entity_memory.service.user_writer import SESSION_TIME_HEADER

router = APIRouter(tags=["extraction"])


@router.post(
    "/v1/users/{user_id}/sessions/{session_id}/extract",
    response_model=ExtractResponse,
    response_model_exclude_unset=True,
    openapi_extra=openapi_body(ExtractBody, text=True),
)
async def extract(
    user_id: UserId,
    session_id: str,
    request: Request,
    b: BindingsDep,
    store: StoreDep,
    ledger: OptionalLedgerDep,
    factory: Annotated[ExtractorFactory, Depends(extractor_factory)],
) -> dict[str, Any]:
    """Extract a session's entities and upsert them; re-sending a session is a no-op."""
    validate_id(session_id, "session")
    if request.headers.get("content-type", "").startswith("text/plain"):
        raw: Any = {"transcript": (await request.body()).decode("utf-8", errors="replace")}
    else:
        raw = await read_json(request)
        if isinstance(raw, str):
            raw = {"transcript": raw}
    body = parse(ExtractBody, raw, "invalid_request", "request does not validate")
    messages = list(body.messages or [])
    if body.transcript:
        messages += _transcript_messages(body.transcript)
    pipeline = SessionExtraction(store, ledger, b, factory)
    first_seen = request.headers.get(SESSION_TIME_HEADER, "")
    session_now = int(first_seen) if b.writer_state is not None and first_seen.isdigit() else None
    outcome = await pipeline.run(
        user_id, session_id, messages, body.extractor, session_now=session_now
    )
    return outcome.to_json_dict()


def _transcript_messages(transcript: str) -> list[Message]:
    try:
        return transcript_to_messages(transcript)
    except ValidationError as exc:
        details = pydantic_details(exc)
        raise ApiError(422, "invalid_request", "transcript does not validate", details) from exc
