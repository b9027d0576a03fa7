"""Session extraction: a conversation in, its entities upserted."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from pydantic import ValidationError

from entity_memory.domain.keys import validate_id
from entity_memory.extraction.base import Message
from entity_memory.http.body import openapi_body, parse, read_json
from entity_memory.http.deps import UserId, WriterDep
from entity_memory.http.errors import ApiError, pydantic_details
from entity_memory.http.schemas import ExtractBody, ExtractResponse
from entity_memory.service.extract_session import transcript_to_messages
from entity_memory.service.writes import ExtractCall

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
    writer: WriterDep,
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
    call = ExtractCall(
        user_id=user_id, session_id=session_id, messages=messages, extractor=body.extractor
    )
    return (await writer.extract(call)).to_json_dict()


def _transcript_messages(transcript: str) -> list[Message]:
    try:
        return transcript_to_messages(transcript)
    except ValidationError as exc:
        details = pydantic_details(exc)
        raise ApiError(422, "invalid_request", "transcript does not validate", details) from exc
