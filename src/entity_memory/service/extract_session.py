"""One session's conversation -> stored entities: the pipeline's entry points.

The pipeline itself is in service/extraction/ as stages (plan, extract, check, resolve,
ledger, upsert); this module keeps the names the routes, the scheduled retry and the tests
import, and the plain-transcript reader of the HTTP route.
"""

from __future__ import annotations

from entity_memory.extraction.base import Message
from entity_memory.service.extraction.pipeline import ExtractionOutcome, SessionExtraction
from entity_memory.service.extraction.plan import merge_ranges, messages_hash
from entity_memory.service.extraction.request_errors import ExtractionRequestError
from entity_memory.service.extraction.resolve_candidates import (
    REPEAT_PENALTY,
    novelty,
    with_provenance,
)
from entity_memory.service.extraction.session_cursor import (
    MAX_PENDING_MESSAGES_BYTES,
    PENDING_FIRST_RETRY_MS,
    PENDING_MAX_RETRY_MS,
)

__all__ = [
    "MAX_PENDING_MESSAGES_BYTES",
    "PENDING_FIRST_RETRY_MS",
    "PENDING_MAX_RETRY_MS",
    "REPEAT_PENALTY",
    "ExtractionOutcome",
    "ExtractionRequestError",
    "SessionExtraction",
    "merge_ranges",
    "messages_hash",
    "novelty",
    "transcript_to_messages",
    "with_provenance",
]


def transcript_to_messages(transcript: str) -> list[Message]:
    """A plain transcript: `user:` / `assistant:` prefixed lines start messages; text without
    a prefix belongs to the message before it (or is the user's, at the start)."""
    messages: list[Message] = []
    for line in transcript.splitlines():
        head, sep, rest = line.partition(":")
        role = head.strip().lower()
        if sep and role in ("user", "assistant", "system"):
            messages.append(Message(role=role, content=rest.strip()))  # type: ignore[arg-type]
        elif messages:
            messages[-1] = Message(
                role=messages[-1].role, content=f"{messages[-1].content}\n{line}".strip()
            )
        elif line.strip():
            messages.append(Message(role="user", content=line.strip()))
    return messages
