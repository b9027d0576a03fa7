"""What both LLM backends share: chunking, context, retries with backoff, splitting, parsing.

A session is cut into chunks by estimated tokens against the model's window (chunking.py).
Each chunk is one chat request carrying read-only context: the session's date, the turns
before it, and the known entities most relevant to it (ranked against the chunk's text with
domain/ranking.py) with their current facts. Then, per chunk:
- a transient failure (HTTP 429, Workers AI 3040 "out of capacity", 5xx, a timeout) is retried
  with exponential backoff, honouring Retry-After when the server sends one;
- a reply cut off at the output budget (finish_reason "length", JSON that stops mid-way) or a
  prompt the server finds too long is SPLIT into two halves and each half is asked again,
  because asking again with the same budget would be cut off again;
- a reply that is not usable JSON is asked once more with a correction;
- a chunk that still fails is reported in `ExtractionResult.failures`; the other chunks'
  entities are kept, and the pipeline records the failed messages as pending.

That is the `single` design (one request per chunk for every entity, the full schema). The
typed designs (typed.py: one short request per kind, compact schema, rules' candidates offered
or merged) share the same backends, backoff and chunking; they split a chunk only when the
prompt is too long, since a cut-off typed reply keeps its complete items.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from entity_memory.domain.kinds import PAIN_POINT, PREFERENCE
from entity_memory.domain.ranking import score_entries
from entity_memory.extraction.base import (
    ChunkFailure,
    ExtractionError,
    ExtractionResult,
    KnownEntity,
    Message,
    Usage,
)
from entity_memory.extraction.llm.ask import (
    Ask,
    ChatMessages,
    Reply,
)
from entity_memory.extraction.llm.chat_models import ModelSpec
from entity_memory.extraction.llm.chunking import (
    Chunk,
    estimate_tokens,
    halve,
    plan_chunks,
    recent_context,
)
from entity_memory.extraction.llm.parsing import OutputError, parse_output, split_items
from entity_memory.extraction.llm.prompt import known_entity_json, system_prompt, user_payload
from entity_memory.extraction.llm.schema import SCHEMA_NAME, entities_json_schema
from entity_memory.extraction.llm.typed import DESIGNS, Design, TypedPasses
from entity_memory.extraction.rules.extractor import extract_candidates

Sleep = Callable[[float], Awaitable[None]]

#: How much of a bad reply is echoed back in the correction (enough to show the mistake).
_ECHO_CHARS = 2000
#: Backoff: first wait, growth, and the longest wait (also caps a server's Retry-After).
BACKOFF_BASE_S = 1.0
BACKOFF_FACTOR = 2.0
MAX_BACKOFF_S = 30.0
#: Halvings of one chunk before it counts as failed (2**4 = 16 pieces).
MAX_SPLIT_DEPTH = 4
#: Chunk size bounds in estimated tokens: big chunks dilute the model's attention even where
#: the window allows them; tiny ones lose the conversation's thread.
MAX_CHUNK_TOKENS = 12_000
MIN_CHUNK_TOKENS = 256
#: Shares of the prompt budget (window - output budget - instructions) for context.
PREVIOUS_SHARE, KNOWN_SHARE = 0.15, 0.20
MAX_PREVIOUS_TOKENS, MAX_KNOWN_TOKENS = 1_500, 3_000
#: An earlier turn keeps at most this many tokens (its end) in the context.
PREVIOUS_MESSAGE_TOKENS = 400
MAX_KNOWN_PER_CHUNK = 40
#: Of the known entities' budget, what the standing ones may take (and never more than
#: half of it, so a small window still shows the campaigns the chunk is about): every open
#: pain point and every preference (they are few, and a session that fixes one or revises one
#: must see it to report the change under its name), before the campaigns, metrics and
#: decisions relevant to the chunk fill the rest.
STANDING_KNOWN_TOKENS = 1_200
#: Headroom for the estimate's error and the chat template's own tokens.
SAFETY_SHARE = 0.08


class RetryableError(ExtractionError):
    """A failure worth retrying after a wait (rate limit, no capacity, 5xx, timeout)."""

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class OutputTruncated(ExtractionError):
    """The reply stopped at the output budget: the chunk must get smaller."""


class PromptTooLong(ExtractionError):
    """The server refused the prompt as longer than the model's window."""


def retry_after_seconds(value: Any) -> float | None:
    """`Retry-After` in seconds (delta form; an HTTP date is not worth parsing here)."""
    try:
        seconds = float(str(value).strip())
    except (TypeError, ValueError):
        return None
    return seconds if seconds >= 0 else None


def retry_messages(messages: ChatMessages, bad_output: str, reason: str) -> ChatMessages:
    """The same request, with the unusable reply and a correction appended."""
    echo = bad_output if len(bad_output) <= _ECHO_CHARS else bad_output[:_ECHO_CHARS] + " ..."
    return [
        *messages,
        {"role": "assistant", "content": echo},
        {
            "role": "user",
            "content": (
                f"Your reply could not be used ({reason}). Reply again with only the complete "
                'JSON object {"entities": [...]} as specified, with no other text.'
            ),
        },
    ]


def _as_text(raw: Any) -> str:
    if isinstance(raw, str):
        return raw
    try:
        return json.dumps(raw, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(raw)


def standing(entity: KnownEntity) -> bool:
    """A preference, or a pain point not known to be resolved: what any session may change."""
    if entity.type == PREFERENCE.type:
        return True
    return entity.type == PAIN_POINT.type and entity.facts.get("resolved") is not True


def _fill(
    ordered: Sequence[KnownEntity], budget_tokens: int, limit: int
) -> tuple[list[KnownEntity], int]:
    chosen: list[KnownEntity] = []
    used = 0
    for entity in ordered[:limit]:
        cost = estimate_tokens(json.dumps(known_entity_json(entity), ensure_ascii=False))
        if used + cost > budget_tokens:
            break
        chosen.append(entity)
        used += cost
    return chosen, used


def rank_known(
    known: Sequence[KnownEntity], text: str, now_ms: int, budget_tokens: int
) -> list[KnownEntity]:
    """What the model is shown of memory: the standing entities (open pain points,
    preferences) within STANDING_KNOWN_TOKENS (at most half the budget), then the others most
    relevant to `text`, best first, within what is left of the token budget.

    Ranked with the context ranking (relevance, importance, recency); entities without an
    index entry (callers outside the pipeline) follow in their given order."""
    with_entry = [k for k in known if k.entry is not None]
    by_id = {(k.type, k.id): k for k in with_entry}
    scores = score_entries([k.entry for k in with_entry if k.entry is not None], text, now_ms)
    ordered = [by_id[(s.type, s.id)] for s in scores]
    ordered += [k for k in known if k.entry is None]
    first, used = _fill(
        [k for k in ordered if standing(k)],
        min(budget_tokens // 2, STANDING_KNOWN_TOKENS),
        MAX_KNOWN_PER_CHUNK,
    )
    taken = {(k.type, k.id) for k in first}
    rest, _ = _fill(
        [k for k in ordered if (k.type, k.id) not in taken],
        budget_tokens - used,
        MAX_KNOWN_PER_CHUNK - len(first),
    )
    return [*first, *rest]


class ChatExtractor:
    """The chunk/retry/split logic; a backend supplies `_call` (one request, typed errors)."""

    name = "llm"

    def __init__(
        self,
        spec: ModelSpec,
        max_tokens: int,
        attempts: int,
        sleep: Sleep | None = None,
        design: Design | None = None,
        passes: Sequence[str] | None = None,
    ) -> None:
        self.spec = spec
        design = design or spec.design  # type: ignore[assignment]
        self.passes: tuple[str, ...] | None = spec.passes if passes is None else tuple(passes)
        self.max_tokens = max_tokens
        self.attempts = max(1, attempts)
        self.sleep: Sleep = sleep or asyncio.sleep
        if design not in DESIGNS:
            raise ValueError(f"unknown extraction design {design!r}; one of {DESIGNS}")
        self.design: Design = design

    async def _call(self, ask: Ask) -> Reply:
        raise NotImplementedError

    def full_ask(self, chat: ChatMessages) -> Ask:
        """The single-call design's request: everything at once, the full schema."""
        return Ask(chat, entities_json_schema(), SCHEMA_NAME, self.max_tokens)

    # --- budgets ---------------------------------------------------------------------------

    def budgets(self) -> tuple[int, int, int]:
        """(chunk, earlier turns, known entities) in estimated tokens."""
        window = self.spec.context_tokens
        room = window - self.max_tokens - estimate_tokens(system_prompt())
        room -= int(window * SAFETY_SHARE)
        previous = max(0, min(MAX_PREVIOUS_TOKENS, int(room * PREVIOUS_SHARE)))
        known = max(0, min(MAX_KNOWN_TOKENS, int(room * KNOWN_SHARE)))
        chunk = max(MIN_CHUNK_TOKENS, min(MAX_CHUNK_TOKENS, room - previous - known))
        return chunk, previous, known

    # --- one request -------------------------------------------------------------------------

    async def call_with_backoff(self, ask: Ask, result: ExtractionResult) -> Reply:
        delay = BACKOFF_BASE_S
        for attempt in range(1, self.attempts + 1):
            result.calls += 1
            try:
                return await self._call(ask)
            except RetryableError as exc:
                if attempt == self.attempts:
                    raise ExtractionError(
                        f"{exc} (gave up after {self.attempts} attempts)"
                    ) from exc
                wait = exc.retry_after_s if exc.retry_after_s is not None else delay
                await self.sleep(min(MAX_BACKOFF_S, wait))
                delay *= BACKOFF_FACTOR
        raise AssertionError("unreachable")

    async def _ask(self, chat: ChatMessages, result: ExtractionResult) -> list[Any]:
        """The items of one chunk's reply; a correction is asked once for unusable JSON."""
        for attempt in (1, 2):
            reply = await self.call_with_backoff(self.full_ask(chat), result)
            if reply.usage is not None and result.usage is not None:
                result.usage.add(reply.usage)
            if reply.truncated:
                raise OutputTruncated(f"{self.name}: the reply hit max_tokens={self.max_tokens}")
            try:
                return parse_output(reply.raw)
            except OutputError as exc:
                if "cut off" in str(exc):
                    raise OutputTruncated(f"{self.name}: {exc}") from None
                if attempt == 2:
                    raise ExtractionError(
                        f"{self.name}: unusable model output after a retry: {exc}"
                    ) from None
                chat = retry_messages(chat, _as_text(reply.raw), str(exc))
        raise AssertionError("unreachable")

    # --- chunks ----------------------------------------------------------------------------

    def request(
        self,
        chunk: Chunk,
        before: Sequence[Message],
        known: Sequence[KnownEntity],
        now_ms: int,
    ) -> ChatMessages:
        _, previous_budget, known_budget = self.budgets()
        context = recent_context(before, previous_budget, PREVIOUS_MESSAGE_TOKENS)
        relevant = rank_known(known, chunk.text, now_ms, known_budget)
        return [
            {"role": "system", "content": system_prompt()},
            {"role": "user", "content": user_payload(chunk.messages, now_ms, relevant, context)},
        ]

    async def _typed_chunk(
        self,
        chunk: Chunk,
        before: Sequence[Message],
        known: Sequence[KnownEntity],
        now_ms: int,
        result: ExtractionResult,
    ) -> None:
        """A typed design's passes over one chunk; only a prompt too long splits it."""
        _, previous_budget, known_budget = self.budgets()
        context = recent_context(before, previous_budget, PREVIOUS_MESSAGE_TOKENS)
        relevant = rank_known(known, chunk.text, now_ms, known_budget)
        rules: list[dict[str, Any]] = []
        if self.design in ("confirm", "union"):
            rules = extract_candidates(list(chunk.messages), list(known))
        passes = TypedPasses(self.design, self.max_tokens, self.passes)
        try:
            found = await passes.run(self, chunk, context, relevant, now_ms, rules, result)
        except PromptTooLong as exc:
            parts = halve(chunk)
            if len(parts) < 2:
                result.failures.append(ChunkFailure(chunk.start, chunk.end, str(exc)))
                return
            done: list[Message] = []
            for part in parts:
                await self._typed_chunk(part, [*before, *done], known, now_ms, result)
                done += part.messages
            return
        except ExtractionError as exc:
            result.failures.append(ChunkFailure(chunk.start, chunk.end, str(exc)))
            return
        result.candidates += found

    async def _extract_chunk(
        self,
        chunk: Chunk,
        before: Sequence[Message],
        known: Sequence[KnownEntity],
        now_ms: int,
        result: ExtractionResult,
        depth: int = 0,
    ) -> None:
        chat = self.request(chunk, before, known, now_ms)
        try:
            items = await self._ask(chat, result)
        except (OutputTruncated, PromptTooLong) as exc:
            parts = halve(chunk)
            if len(parts) < 2 or depth >= MAX_SPLIT_DEPTH:
                result.failures.append(
                    ChunkFailure(chunk.start, chunk.end, f"{exc}; cannot split further")
                )
                return
            done: list[Message] = []
            for part in parts:
                await self._extract_chunk(part, [*before, *done], known, now_ms, result, depth + 1)
                done += part.messages
            return
        except ExtractionError as exc:
            result.failures.append(ChunkFailure(chunk.start, chunk.end, str(exc)))
            return
        candidates, rejected = split_items(items)
        result.candidates += candidates
        result.rejected += rejected

    async def extract(
        self,
        messages: list[Message],
        known: list[KnownEntity],
        now_ms: int,
        *,
        previous: Sequence[Message] = (),
    ) -> ExtractionResult:
        result = ExtractionResult(extractor=self.name, usage=Usage())
        chunk_budget, _, known_budget = self.budgets()
        for chunk in plan_chunks(messages, chunk_budget):
            before = [*previous, *messages[: chunk.start]]
            shown = rank_known(known, chunk.text, now_ms, known_budget)
            result.shown.update((k.type, k.id) for k in shown)
            if self.design == "single":
                await self._extract_chunk(chunk, before, known, now_ms, result)
            else:
                await self._typed_chunk(chunk, before, known, now_ms, result)
        return result
