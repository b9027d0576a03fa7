"""One session's conversation -> stored entities: the SPEC pipeline, end to end.

extractor -> schema validation -> resolution against what is stored -> novelty -> one batch
upsert (KV + one ledger write). Sessions are idempotent: the ledger remembers how many messages
of a session were read and their hash, so a re-send costs one D1 read, and a session that grew
processes only its new messages.

Which extractor: the one the request names, else the deployment's (registry.py). The rules run
only where no LLM is configured or where the caller asks for them. An LLM failure is never
hidden behind the rules: the chunks that succeeded are stored, the messages that failed are
recorded as *pending* in the ledger, and the response says `degraded: true` with
`degradedReason`. Pending messages are retried by the scheduled handler (retry_pending.py) and
by the next send of the same session. We do not store a rules extraction meanwhile: its names
would not match what the LLM later finds, leaving duplicates behind.

In the ledger, `processed_sessions` is the read cursor (how many messages were read, their
hash) and `pending_sessions` the message ranges still owed; a session is processed when it
has no pending row. Keeping the cursor lets a grown session send only its new messages while
the owed ones wait for their retry.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from entity_memory.domain.keys import entity_key, validate_id
from entity_memory.domain.limits import MAX_MESSAGES
from entity_memory.domain.models import (
    BaseEntity,
    EntityInputBase,
    IndexEntry,
    Provenance,
    parse_entity,
)
from entity_memory.domain.ranking import score_entries
from entity_memory.domain.text import tokenize
from entity_memory.extraction.base import (
    ChunkFailure,
    ExtractionError,
    ExtractionResult,
    ExtractorUnavailable,
    KnownEntity,
    Message,
    Usage,
)
from entity_memory.extraction.registry import (
    EXTRACTORS,
    LLM_EXTRACTORS,
    ExtractorFactory,
    build_extractor,
    configured_extractor,
)
from entity_memory.extraction.resolve import Resolver
from entity_memory.extraction.validate import validate_candidates
from entity_memory.service.semantic_resolve import semantic_neighbours
from entity_memory.service.settings import Bindings
from entity_memory.storage.ledger import Ledger
from entity_memory.storage.store import EntityStore

#: Importance taken off a mention that adds nothing to what is stored (SPEC: novelty).
REPEAT_PENALTY = 0.15
#: Known entities whose current facts are read for an LLM's context (one bulk KV read).
KNOWN_WITH_FACTS = 100
#: Retry schedule of a pending session: first wait, doubling, at most this.
PENDING_FIRST_RETRY_MS = 5 * 60 * 1000
PENDING_MAX_RETRY_MS = 6 * 60 * 60 * 1000
#: D1 caps a row at 2 MB; a larger conversation is kept pending without its messages (then
#: only a re-send of the session can retry it).
MAX_PENDING_MESSAGES_BYTES = 1_800_000


class ExtractionRequestError(ValueError):
    """A request the pipeline cannot run; `code` is machine-readable (HTTP maps it)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


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


def novelty(old: BaseEntity | None, item: EntityInputBase) -> EntityInputBase:
    """A mention that only repeats what is stored is worth less than new information."""
    if old is None:
        return item
    if set(tokenize(item.content)) <= set(tokenize(old.content)):
        return item.model_copy(update={"importance": max(0.0, item.importance - REPEAT_PENALTY)})
    return item


def merge_ranges(ranges: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def with_provenance(item: EntityInputBase, extractor: str) -> EntityInputBase:
    """Stamp the extractor on the item's provenance (one entry from its `source` if none)."""
    entries = list(item.provenance) or [Provenance(excerpt=item.source or "")]
    stamped = [e.model_copy(update={"extractor": e.extractor or extractor}) for e in entries]
    return item.model_copy(update={"provenance": stamped})


@dataclass
class ExtractionOutcome:
    """What one extraction did; `to_json_dict` is the response body."""

    processed: bool
    extractor: str | None
    entities: list[dict[str, Any]] = field(default_factory=list)
    results: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, int] | None = None
    usage: Usage | None = None
    reason: str | None = None
    #: Messages an LLM still owes (recorded pending in the ledger).
    pending: bool = False
    degraded_reason: str | None = None

    def to_json_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "processed": self.processed,
            "extractor": self.extractor,
            "entities": self.entities,
            "results": self.results,
            # The items whose stored facts changed (contradictions among them), for a quick look.
            "changes": [r for r in self.results if r.get("changes")],
            "rejected": self.rejected,
            "degraded": self.degraded_reason is not None,
            "pending": self.pending,
        }
        if self.reason:
            body["reason"] = self.reason
        if self.counts is not None:
            body["counts"] = self.counts
        if self.degraded_reason is not None:
            body["degradedReason"] = self.degraded_reason
        if self.usage is not None and (self.usage.input_tokens or self.usage.output_tokens):
            body["usage"] = {
                "input_tokens": self.usage.input_tokens,
                "output_tokens": self.usage.output_tokens,
            }
        return body


@dataclass
class SessionExtraction:
    store: EntityStore
    ledger: Ledger | None
    bindings: Bindings
    factory: ExtractorFactory = build_extractor

    def _choose(self, requested: str | None) -> str:
        if requested is not None:
            if requested not in EXTRACTORS:
                raise ExtractionRequestError(
                    "invalid_extractor",
                    f"unknown extractor {requested!r}; one of {', '.join(EXTRACTORS)}",
                )
            return requested
        try:
            return configured_extractor(self.bindings)
        except ValueError as exc:  # a bad EXTRACTOR / LLM_* var
            raise ExtractionRequestError("extractor_misconfigured", str(exc)) from exc

    def _build(self, name: str, requested: bool) -> Any:
        try:
            return self.factory(name, self.bindings)
        except ExtractorUnavailable as exc:
            code = "extractor_unavailable" if requested else "extractor_misconfigured"
            raise ExtractionRequestError(code, str(exc)) from exc
        except ValueError as exc:
            raise ExtractionRequestError("extractor_misconfigured", str(exc)) from exc

    async def _known(
        self, user_id: str, entries: Sequence[IndexEntry], text: str, now: int, llm: bool
    ) -> list[KnownEntity]:
        """Every index entry as a known entity; for an LLM, the most relevant ones to the
        conversation also carry their current facts (one bulk read)."""
        facts: dict[tuple[str, str], dict[str, Any]] = {}
        if llm and entries:
            top = score_entries(entries, text, now)[:KNOWN_WITH_FACTS]
            keys = [entity_key(user_id, s.type, s.id) for s in top]
            for data in (await self.store.kv.get_json_many(keys)).values():
                if data is None:
                    continue
                try:
                    entity = parse_entity(data)
                except ValueError:
                    continue
                facts[(entity.type, entity.id)] = entity.to_json_dict().get("metadata", {})
        return [
            KnownEntity(
                e.type, e.id, e.name, tuple(e.aliases), facts.get((e.type, e.id), {}), entry=e
            )
            for e in entries
        ]

    async def run(
        self,
        user_id: str,
        session_id: str,
        messages: list[Message],
        extractor: str | None,
        session_now: int | None = None,
    ) -> ExtractionOutcome:
        """Extract what is new in the session (and what is pending of it).

        `session_now`: the session's own time for the prompt's date when it differs from now
        (a pending session retried later)."""
        validate_id(user_id, "user")
        validate_id(session_id, "session")
        if not any(m.content.strip() for m in messages):
            raise ExtractionRequestError("empty_conversation", "the conversation is empty")
        if len(messages) > MAX_MESSAGES:
            raise ExtractionRequestError("too_large", f"at most {MAX_MESSAGES} messages")
        name = self._choose(extractor)
        is_llm = name in LLM_EXTRACTORS

        done = 0
        pending: dict[str, Any] | None = None
        had_pending = False
        if self.ledger is not None:
            seen = await self.ledger.processed_session(user_id, session_id)
            had_pending = bool(seen and seen["pending"])
            read = int(seen["counts"].get("messages", 0)) if seen else 0
            same_prefix = seen and 0 < read <= len(messages)
            if same_prefix and messages_hash(messages[:read]) == seen["content_hash"]:
                done, pending = read, seen["pending"]
        ranges: list[tuple[int, int]] = []
        if pending is not None and is_llm:
            ranges += [(s, e) for s, e in pending["ranges"] if e <= done]
        if done < len(messages):
            ranges.append((done, len(messages)))
        if not ranges:
            reason = "session already processed"
            if pending is not None:
                reason = "session already processed; part of it is pending an LLM retry"
            return ExtractionOutcome(
                processed=False, extractor=None, reason=reason, pending=pending is not None
            )

        built = self._build(name, requested=extractor is not None)
        now = self.store.clock()
        index = await self.store.read_index(user_id)
        text = "\n".join(m.content for s, e in ranges for m in messages[s:e])
        known = await self._known(user_id, index.entries, text, now, is_llm)
        result = ExtractionResult(extractor=name, usage=Usage())
        for start, end in ranges:
            part = await self._extract(built, messages, start, end, known, session_now or now)
            result.candidates += part.candidates
            result.rejected += part.rejected
            result.failures += [
                ChunkFailure(start + f.start, start + f.end, f.reason) for f in part.failures
            ]
            if part.usage is not None and result.usage is not None:
                result.usage.add(part.usage)

        inputs, rejected = validate_candidates(result.candidates)
        resolver = Resolver(index.entries)
        near = await semantic_neighbours(self.store.embedder, index, inputs)
        resolved = [
            with_provenance(resolver.resolve(item, neighbour)[0], name)
            for item, neighbour in zip(inputs, near, strict=True)
        ]
        owed = merge_ranges([(f.start, f.end) for f in result.failures])
        counts = {
            "messages": len(messages),
            "newMessages": len(messages) - done,
            "candidates": len(result.candidates),
            "rejected": len(rejected) + len(result.rejected),
            "pendingMessages": sum(e - s for s, e in owed),
        }
        extra = []
        if self.ledger is not None:
            content_hash = messages_hash(messages)
            extra.append(
                self.ledger.session_statement(user_id, session_id, content_hash, now, counts)
            )
            if owed:
                attempts = pending["attempts"] if pending else 0
                wait = min(PENDING_MAX_RETRY_MS, PENDING_FIRST_RETRY_MS * 2**attempts)
                doc = json.dumps([m.model_dump() for m in messages], ensure_ascii=False)
                stored = doc if len(doc.encode()) <= MAX_PENDING_MESSAGES_BYTES else None
                extra.append(
                    self.ledger.pending_statement(
                        user_id,
                        session_id,
                        name,
                        content_hash,
                        stored,
                        owed,
                        result.failures[0].reason,
                        now,
                        now + wait,
                    )
                )
            elif had_pending and (is_llm or pending is None):
                extra.append(self.ledger.clear_pending_statement(user_id, session_id))
        upserted = await self.store.upsert_many(
            user_id, resolved, session_id, index=index, adjust=novelty, ledger_extra=extra
        )
        if not resolved and self.ledger is not None:
            await self.ledger.write(extra)  # nothing to store, but the session was read
        degraded = None
        if owed:
            later = (
                "now pending a retry"
                if self.ledger is not None
                else "no ledger to keep them pending: send the session again to retry"
            )
            degraded = (
                f"{name} failed on {counts['pendingMessages']} message(s), {later}:"
                f" {result.failures[0].reason}"
            )
        return ExtractionOutcome(
            processed=not owed,
            extractor=name,
            entities=[r.entity.to_json_dict() for r in upserted],
            results=[r.to_json_dict() for r in upserted],
            rejected=result.rejected + rejected,
            counts=counts,
            usage=result.usage,
            pending=bool(owed) and self.ledger is not None,
            degraded_reason=degraded,
        )

    async def _extract(
        self,
        extractor: Any,
        messages: list[Message],
        start: int,
        end: int,
        known: list[KnownEntity],
        now: int,
    ) -> ExtractionResult:
        """One range of messages; an LLM sees the messages before it as context. An extractor
        that fails outright fails the whole range."""
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
