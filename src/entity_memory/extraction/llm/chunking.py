"""Cutting a session into chunks that fit the model, by estimated tokens.

No tokenizer runs in the Worker, so tokens are estimated: about one per CJK character (Chinese,
Japanese, Korean scripts are dense) and one per four characters otherwise, plus a few per
message for the JSON around it. The estimate errs high; a chunk that still overflows is split
again when the server says so. A message longer than a chunk is split at paragraph, then
sentence, then word boundaries, so no chunk ever carries more than the budget.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from entity_memory.domain.text import CHARS_PER_TOKEN, estimate_tokens, has_cjk
from entity_memory.extraction.base import Message

#: Tokens of JSON framing per message (`{"role": "user", "content": ""}`).
MESSAGE_OVERHEAD_TOKENS = 8
_BREAKS = (
    re.compile(r"\n\s*\n"),
    re.compile("(?<=[.!?\u3002\uff01\uff1f])\\s*"),
    re.compile(r"\s+"),
)


def message_tokens(message: Message) -> int:
    return estimate_tokens(message.content) + MESSAGE_OVERHEAD_TOKENS


@dataclass(frozen=True)
class Chunk:
    """Messages `[start, end)` of the list chunked; `messages` may hold one piece of a long one."""

    start: int
    end: int
    messages: tuple[Message, ...]

    @property
    def tokens(self) -> int:
        return sum(message_tokens(m) for m in self.messages)

    @property
    def text(self) -> str:
        return "\n".join(m.content for m in self.messages)


def _cut(text: str, budget: int) -> list[str]:
    """`text` in pieces of at most `budget` estimated tokens, cut at the coarsest boundary;
    the pieces concatenate back to `text` exactly."""
    if estimate_tokens(text) <= budget:
        return [text]
    for pattern in _BREAKS:
        cuts = sorted({m.end() for m in pattern.finditer(text) if 0 < m.end() < len(text)})
        if not cuts:
            continue
        parts = [text[i:j] for i, j in zip([0, *cuts], [*cuts, len(text)], strict=True)]
        pieces: list[str] = []
        current = ""
        for part in parts:
            if current and estimate_tokens(current + part) > budget:
                pieces.append(current)
                current = part
            else:
                current += part
        if current:
            pieces.append(current)
        if len(pieces) > 1:
            return [sub for piece in pieces for sub in _cut(piece, budget)]
    # One unbroken run (a CJK paragraph, a pasted blob): cut by characters.
    step = max(1, budget if has_cjk(text) else budget * CHARS_PER_TOKEN)
    return [text[i : i + step] for i in range(0, len(text), step)]


def split_message(message: Message, budget: int) -> list[Message]:
    content_budget = max(1, budget - MESSAGE_OVERHEAD_TOKENS)
    return [Message(role=message.role, content=p) for p in _cut(message.content, content_budget)]


def plan_chunks(messages: Sequence[Message], budget: int, offset: int = 0) -> list[Chunk]:
    """Consecutive chunks of at most `budget` estimated tokens; a message over the budget
    becomes several chunks of its own, each covering that one message index."""
    chunks: list[Chunk] = []
    current: list[Message] = []
    start = offset
    size = 0
    for i, message in enumerate(messages, start=offset):
        tokens = message_tokens(message)
        if tokens > budget:
            if current:
                chunks.append(Chunk(start, i, tuple(current)))
                current, size = [], 0
            chunks += [Chunk(i, i + 1, (piece,)) for piece in split_message(message, budget)]
            start = i + 1
            continue
        if current and size + tokens > budget:
            chunks.append(Chunk(start, i, tuple(current)))
            current, size = [], 0
        if not current:
            start = i
        current.append(message)
        size += tokens
    if current:
        chunks.append(Chunk(start, start + len(current), tuple(current)))
    return chunks


def halve(chunk: Chunk) -> list[Chunk]:
    """Two smaller chunks covering `chunk` (a reply that was cut off, a prompt too long), or
    the chunk alone when it cannot get smaller."""
    if len(chunk.messages) > 1:
        mid = len(chunk.messages) // 2
        # A chunk of whole messages maps piece i to message start + i; pieces of one message
        # all map to that message.
        whole = chunk.end - chunk.start == len(chunk.messages)
        split_at = chunk.start + mid if whole else chunk.start
        first = Chunk(chunk.start, split_at if whole else chunk.end, chunk.messages[:mid])
        second = Chunk(split_at, chunk.end, chunk.messages[mid:])
        return [first, second]
    [message] = chunk.messages
    tokens = message_tokens(message)
    if tokens < 2 * MESSAGE_OVERHEAD_TOKENS + 8:
        return [chunk]
    pieces = split_message(message, tokens // 2 + 1)
    if len(pieces) < 2:
        return [chunk]
    return [Chunk(chunk.start, chunk.end, (p,)) for p in pieces]


def recent_context(previous: Sequence[Message], budget: int, per_message: int) -> list[Message]:
    """The last messages before a chunk, newest kept first, within `budget` tokens; a long one
    keeps its end (what was just proposed is what "do it" refers to)."""
    kept: list[Message] = []
    used = 0
    for message in reversed(previous):
        content = message.content
        if estimate_tokens(content) > per_message:
            tail = (
                content[-per_message:]
                if has_cjk(content)
                else content[-per_message * CHARS_PER_TOKEN :]
            )
            content = "..." + tail
        cost = estimate_tokens(content) + MESSAGE_OVERHEAD_TOKENS
        if used + cost > budget:
            break
        kept.append(Message(role=message.role, content=content))
        used += cost
    return list(reversed(kept))
