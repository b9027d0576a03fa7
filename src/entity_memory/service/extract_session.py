"""One session's conversation -> stored entities: the SPEC pipeline, end to end.

extractor (LLM or rules, with the rules as fallback) -> schema validation -> resolution
against what is stored -> novelty -> one batch upsert (KV + one ledger write). Sessions are
idempotent: the ledger remembers how many messages of a session were processed and their
hash, so a re-send costs one D1 read, and a session that grew processes only its new messages.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from entity_memory.domain.keys import validate_id
from entity_memory.domain.models import BaseEntity, EntityInputBase
from entity_memory.domain.text import tokenize
from entity_memory.extraction.base import (
    ExtractionError,
    ExtractionResult,
    KnownEntity,
    Message,
    Usage,
)
from entity_memory.extraction.registry import (
    EXTRACTORS,
    ExtractorFactory,
    build_extractor,
    configured_extractor,
)
from entity_memory.extraction.resolve import Resolver
from entity_memory.extraction.validate import validate_candidates
from entity_memory.service.settings import Bindings
from entity_memory.storage.ledger import Ledger
from entity_memory.storage.store import EntityStore

#: Characters of transcript per LLM call (~6k tokens), so long sessions fit any model.
CHUNK_CHARS = 24_000
MAX_MESSAGES = 2_000
#: Importance taken off a mention that adds nothing to what is stored (SPEC: novelty).
REPEAT_PENALTY = 0.15


class ExtractionRequestError(ValueError):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


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


def messages_hash(messages: Sequence[Message]) -> str:
    doc = json.dumps([[m.role, m.content] for m in messages], ensure_ascii=False)
    return hashlib.sha256(doc.encode()).hexdigest()


def chunk_messages(messages: Sequence[Message], max_chars: int) -> list[list[Message]]:
    chunks: list[list[Message]] = [[]]
    size = 0
    for message in messages:
        if chunks[-1] and size + len(message.content) > max_chars:
            chunks.append([])
            size = 0
        chunks[-1].append(message)
        size += len(message.content)
    return [c for c in chunks if c]


def novelty(old: BaseEntity | None, item: EntityInputBase) -> EntityInputBase:
    """A mention that only repeats what is stored is worth less than new information."""
    if old is None:
        return item
    if set(tokenize(item.content)) <= set(tokenize(old.content)):
        return item.model_copy(update={"importance": max(0.0, item.importance - REPEAT_PENALTY)})
    return item


async def run_extractor(
    name: str,
    bindings: Bindings,
    messages: list[Message],
    known: list[KnownEntity],
    now: int,
    factory: ExtractorFactory = build_extractor,
) -> ExtractionResult:
    """Run `name` over the messages in chunks; on any failure, the rules extractor instead."""
    try:
        extractor = factory(name, bindings)
        if extractor.name == "rules":
            return await extractor.extract(messages, known, now)
        merged = ExtractionResult(extractor=extractor.name, usage=Usage())
        for chunk in chunk_messages(messages, CHUNK_CHARS):
            part = await extractor.extract(chunk, known, now)
            merged.candidates += part.candidates
            merged.rejected += part.rejected
            if part.usage is not None and merged.usage is not None:
                merged.usage.add(part.usage)
        return merged
    except ExtractionError as exc:
        result = await factory("rules", bindings).extract(messages, known, now)
        result.fallback_reason = str(exc)
        return result


@dataclass
class SessionExtraction:
    store: EntityStore
    ledger: Ledger | None
    bindings: Bindings
    factory: ExtractorFactory = build_extractor

    async def run(
        self, user_id: str, session_id: str, messages: list[Message], extractor: str | None
    ) -> dict[str, Any]:
        validate_id(user_id, "user")
        validate_id(session_id, "session")
        if not any(m.content.strip() for m in messages):
            raise ExtractionRequestError(422, "empty_conversation", "the conversation is empty")
        if len(messages) > MAX_MESSAGES:
            raise ExtractionRequestError(413, "too_large", f"at most {MAX_MESSAGES} messages")
        name = extractor or configured_extractor(self.bindings)
        if name not in EXTRACTORS:
            raise ExtractionRequestError(
                400,
                "invalid_extractor",
                f"unknown extractor {name!r}; one of {', '.join(EXTRACTORS)}",
            )

        new = messages
        if self.ledger is not None:
            seen = await self.ledger.processed_session(user_id, session_id)
            done = int(seen["counts"].get("messages", 0)) if seen else 0
            same_prefix = seen and 0 < done <= len(messages)
            if same_prefix and messages_hash(messages[:done]) == seen["content_hash"]:
                new = messages[done:]
            if not new:
                return {
                    "processed": False,
                    "reason": "session already processed",
                    "entities": [],
                    "results": [],
                    "changes": [],
                    "rejected": [],
                    "extractor": None,
                }

        now = self.store.clock()
        index = await self.store.read_index(user_id)
        known = [KnownEntity(e.type, e.id, e.name, tuple(e.aliases)) for e in index.entries]
        result = await run_extractor(name, self.bindings, new, known, now, self.factory)
        inputs, rejected = validate_candidates(result.candidates)
        resolver = Resolver(index.entries)
        resolved = [resolver.resolve(item)[0] for item in inputs]

        counts = {
            "messages": len(messages),
            "newMessages": len(new),
            "candidates": len(result.candidates),
            "rejected": len(rejected) + len(result.rejected),
        }
        extra = []
        if self.ledger is not None:
            extra.append(
                self.ledger.session_statement(
                    user_id, session_id, messages_hash(messages), now, counts
                )
            )
        upserted = await self.store.upsert_many(
            user_id, resolved, session_id, index=index, adjust=novelty, ledger_extra=extra
        )
        if not resolved and self.ledger is not None:
            await self.ledger.write(extra)  # nothing to store, but the session was read
        response: dict[str, Any] = {
            "processed": True,
            "extractor": result.extractor,
            "entities": [r.entity.to_json_dict() for r in upserted],
            "results": [r.to_json_dict() for r in upserted],
            # The items whose stored facts changed (contradictions among them), for a quick look.
            "changes": [r.to_json_dict() for r in upserted if r.changes],
            "rejected": result.rejected + rejected,
            "counts": counts,
        }
        if result.fallback_reason:
            response["fallbackReason"] = result.fallback_reason
        if result.usage is not None and (result.usage.input_tokens or result.usage.output_tokens):
            response["usage"] = {
                "input_tokens": result.usage.input_tokens,
                "output_tokens": result.usage.output_tokens,
            }
        return response
