"""Typed passes: one short request per kind of fact, for models too small to do all at once.

Measured on the dev set with a 1.5B model, one request asking for every entity with the full
schema found few facts and invented some; asked for one kind with a compact schema
(typed_items.py), the same model copies a quote and fills three or four fields. Per chunk:

- every pass sends the same system message and the same chunk document, and only the last
  line differs (typed_prompt.py), so a server with a prompt cache reads the long part once;
- a pass's output budget follows from the chunk's size and the kind's item limit;
- a reply cut off at its budget (or looping until it) keeps the complete items before the
  cut and is not asked again: asking again would cost the same and be cut again, and the
  grounding checks judge what is kept;
- designs: `typed` (the model alone), `confirm` (the rules' candidates of the kind are
  offered to the model to keep, fix or drop, and it adds what they missed), `union` (the
  rules' candidates plus the model's, the rules' winning a name both found).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from entity_memory.domain import safe_json
from entity_memory.domain.kind import kind_of
from entity_memory.domain.text import normalize_name
from entity_memory.extraction.base import ExtractionResult, KnownEntity, Message
from entity_memory.extraction.llm.ask import Ask
from entity_memory.extraction.llm.chunking import Chunk
from entity_memory.extraction.llm.parsing import _closing
from entity_memory.extraction.llm.typed_items import (
    KINDS,
    item_schema,
    parse_item,
    to_candidate,
)
from entity_memory.extraction.llm.typed_prompt import SYSTEM, chunk_document, pass_question

Design = Literal["single", "typed", "confirm", "union"]
DESIGNS: tuple[str, ...] = ("single", "typed", "confirm", "union")
#: A pass's output budget: a floor, plus this share of the chunk's tokens, at most the kind's
#: item limit times its item size.
PASS_BASE_TOKENS = 40
PASS_CHUNK_SHARE = 0.5


def pass_budget(kind: str, chunk_tokens: int, max_tokens: int | None = None) -> int:
    """Output tokens for one pass: grows with the chunk, capped by what the kind can need and
    by the extractor's own `max_tokens` (AI_MAX_TOKENS / LLM_MAX_TOKENS when set)."""
    ceiling = kind_of(kind).llm_max_items * kind_of(kind).llm_item_tokens
    if max_tokens is not None:
        ceiling = min(ceiling, max_tokens)
    return min(ceiling, PASS_BASE_TOKENS + int(chunk_tokens * PASS_CHUNK_SHARE))


def read_items(raw: Any) -> tuple[list[Any], bool]:
    """The items of a pass's reply and whether the reply was cut short: complete objects
    before a cut are kept, the unfinished one is dropped."""
    if isinstance(raw, dict):
        items = raw.get("items")
        return (items if isinstance(items, list) else []), False
    text = raw if isinstance(raw, str) else ""
    try:
        value = safe_json.loads(text.strip())
    except ValueError:
        return _salvage(text), True
    if isinstance(value, dict) and isinstance(value.get("items"), list):
        return value["items"], False
    return (value if isinstance(value, list) else []), False


def _salvage(text: str) -> list[Any]:
    start = text.find("[", max(0, text.find('"items"')))
    out: list[Any] = []
    pos = start + 1 if start >= 0 else len(text)
    while True:
        opening = text.find("{", pos)
        if opening < 0:
            return out
        end = _closing(text, opening)
        if end is None:
            return out
        try:
            out.append(safe_json.loads(text[opening:end]))
        except ValueError:
            return out
        pos = end


def offered_item(candidate: dict[str, Any]) -> dict[str, Any]:
    """A rules candidate in the compact shape the model writes."""
    kind = kind_of(candidate["type"])
    meta = candidate.get("metadata") or {}
    item: dict[str, Any] = {"quote": candidate.get("source") or ""}
    asked = kind.llm_item
    if asked is not None and asked.named_by:
        item[asked.named_by] = candidate["name"]
    renamed = asked.offered_as if asked is not None else {}
    for key in kind.offered_fields:
        if meta.get(key) is not None:
            item[renamed.get(key, key)] = meta[key]
    return item


def dedupe(candidates: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One candidate per (type, name) and per (type, quote): the first wins (a model that
    loops repeats itself)."""
    seen: set[tuple[str, str]] = set()
    out: list[dict[str, Any]] = []
    for c in candidates:
        keys = {(c["type"], normalize_name(c["name"])), (c["type"], str(c.get("source", "")))}
        if keys & seen:
            continue
        seen |= keys
        out.append(c)
    return out


class TypedPasses:
    """The passes of one design over one chunk, through a backend's `call_with_backoff`."""

    def __init__(
        self,
        design: Design,
        max_tokens: int | None = None,
        passes: Sequence[str] | None = None,
    ) -> None:
        self.design = design
        self.max_tokens = max_tokens
        self.passes = tuple(k for k in KINDS if passes is None or k in passes)

    def kinds(self) -> tuple[str, ...]:
        return self.passes

    def ask_for(self, kind: str, document: str, chunk: Chunk, offered: list[Any]) -> Ask:
        question = pass_question(kind, offered if self.design == "confirm" else ())
        chat = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"{document}\n\n{question}"},
        ]
        return Ask(
            chat,
            item_schema(kind),
            f"{kind}_items",
            pass_budget(kind, chunk.tokens, self.max_tokens),
        )

    async def run(
        self,
        backend: Any,
        chunk: Chunk,
        context: Sequence[Message],
        known: Sequence[KnownEntity],
        now_ms: int,
        rules: Sequence[dict[str, Any]],
        result: ExtractionResult,
    ) -> list[dict[str, Any]]:
        """The chunk's candidates: each of its passes asked once, in the order of KINDS."""
        document = chunk_document(chunk.messages, now_ms, known, context)
        found: list[dict[str, Any]] = list(rules) if self.design == "union" else []
        for kind in self.kinds():
            offered = [offered_item(c) for c in rules if c["type"] == kind]
            reply = await backend.call_with_backoff(
                self.ask_for(kind, document, chunk, offered), result
            )
            if reply.usage is not None and result.usage is not None:
                result.usage.add(reply.usage)
            items, cut = read_items(reply.raw)
            if cut or reply.truncated:
                result.truncated += 1
            for raw in items[: kind_of(kind).llm_max_items]:
                item = parse_item(kind, raw)
                if item is None:
                    result.rejected.append({"item": raw, "reason": f"not a {kind} item"})
                else:
                    found.append(to_candidate(kind, item))
        return dedupe(found)
