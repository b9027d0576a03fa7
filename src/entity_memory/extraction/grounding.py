"""Grounding: every candidate must be traceable to words of the conversation, whoever made it.

A small model (and sometimes a large one) invents: an excerpt nobody wrote, a number that is
nowhere in the conversation, a campaign named after the advertiser's own business, a "$196
spent" read as a CPA of 196. The memory prefers a missing fact to a wrong one, so each
candidate, from the rules or from a model, passes these checks after schema validation and
before resolution. A candidate is rejected whole (with the reason, never stored) only when
nothing of it can be trusted:

1. its `source` excerpt occurs in the conversation (case, whitespace, quote marks and dashes
   normalised; an excerpt elided with "..." must occur piece by piece);
2. a campaign's name occurs in the conversation or among the known entities' names;
3. a campaign is not the advertiser's own business: names the user introduces as their
   business, shop, company ... ("my studio, Clay Corner", "I run Clay Corner") are not campaigns;
4. a metric keeps at least one grounded number (value or target).

Its numbers are checked field by field (grounding_numbers.py): a field that fails is dropped
and reported (`FieldDrop`); the entity's other fields are kept.

Pure functions over plain text; nothing here reads storage or calls a model.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from entity_memory.domain import pacing
from entity_memory.domain.amounts import WrittenNumbers, mentions_of, number_values
from entity_memory.domain.kinds import CAMPAIGN, METRIC
from entity_memory.domain.models import EntityInputBase
from entity_memory.domain.pacing import Pacer, Steps
from entity_memory.domain.vocab import GENERIC_NAME_WORDS
from entity_memory.extraction.base import KnownEntity, Message
from entity_memory.extraction.grounding_numbers import (
    numeric_fields,
    restates,
    tied_to_other_kpi,
    unsupported_numbers,
)
from entity_memory.extraction.grounding_text import (
    SLICE_CHARS,
    business_parts,
    contains_words,
    names_in,
    normalise_text,
    normalise_words,
    slices,
)

#: Excerpt pieces (between "..." elisions) shorter than this are not checked on their own.
MIN_PIECE_CHARS = 3

_ELLIPSIS = re.compile(r"\.\.\.+|\u2026")


# --- the checks --------------------------------------------------------------------------------


class GroundingContext(BaseModel):
    """What candidates are checked against: one session's conversation and what is known."""

    model_config = ConfigDict(frozen=True)

    #: The conversation, `normalise_text`-ed and `normalise_words`-ed.
    text: str
    words: str
    #: The numbers `text` writes (asked once per number of every candidate).
    numbers: WrittenNumbers = WrittenNumbers()
    #: Known entity names and aliases per type (normalised words).
    known: dict[str, frozenset[str]]
    #: The numbers memory holds for known entities: (type, normalised name or alias) -> field
    #: path -> values (a metric's value and its history, its target, a budget ...).
    known_numbers: dict[tuple[str, str], dict[str, tuple[float, ...]]] = {}
    business: frozenset[str]


class Rejection(BaseModel):
    """A candidate that failed a check: `code` is machine-readable, `reason` starts with
    "ungrounded:" and says what was not found."""

    item: dict[str, object]
    code: str
    reason: str


class FieldDrop(BaseModel):
    """A field removed from a kept candidate: which entity, which field and value, and why
    (`code` machine-readable)."""

    type: str
    name: str
    field: str
    value: float | str | None
    code: str
    reason: str

    def to_json_dict(self) -> dict[str, object]:
        return self.model_dump(mode="json")


class Grounded(BaseModel):
    """The candidates kept (with the fields that failed removed), the candidates rejected
    whole, and the fields dropped from kept ones."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    kept: list[EntityInputBase]
    rejected: list[Rejection]
    dropped: list[FieldDrop]


def _known_numbers(facts: Mapping[str, object]) -> dict[str, tuple[float, ...]]:
    out: dict[str, list[float]] = {}
    for path, value in numeric_fields(facts):
        out.setdefault(path, []).append(value)
    history = facts.get("history")
    if isinstance(history, list):
        for h in history:
            if isinstance(h, Mapping) and isinstance(h.get("value"), int | float):
                out.setdefault("value", []).append(float(h["value"]))  # type: ignore[arg-type]
    return {k: tuple(v) for k, v in out.items()}


def _context_steps(
    texts: Sequence[tuple[str, str]],
    known: Iterable[tuple[str, str]],
    known_facts: Iterable[tuple[str, str, Mapping[str, object]]],
) -> Steps[GroundingContext]:
    """`grounding_context` in steps of one slice, one stretch of numbers or one message's
    business names, each yielding the characters it read."""
    text_parts: list[str] = []
    word_parts: list[str] = []
    for _, content in texts:
        for piece in slices(content):
            text_parts.append(normalise_text(piece))
            word_parts.append(normalise_words(piece))
            yield len(piece)
    text = " ".join(p for p in text_parts if p)
    numbers: list[tuple[float, bool]] = []
    read = 0
    for value, percent, end in number_values(text):
        numbers.append((value, percent))
        if end - read >= SLICE_CHARS:
            yield end - read
            read = end
    business: set[str] = set()
    for role, content in texts:
        for pos, endpos in business_parts(content) if role == "user" else ():
            business |= names_in(content, pos, endpos)
            yield endpos - pos
    by_type: dict[str, set[str]] = {}
    for entity_type, name in known:
        by_type.setdefault(entity_type, set()).add(normalise_words(name))
    facts = {
        (entity_type, normalise_words(name)): _known_numbers(facts)
        for entity_type, name, facts in known_facts
    }
    return GroundingContext(
        text=text,
        words=" ".join(p for p in word_parts if p),
        numbers=WrittenNumbers.of(numbers),
        known={t: frozenset(n) for t, n in by_type.items()},
        known_numbers={k: v for k, v in facts.items() if v},
        business=frozenset(business),
    )


def grounding_context(
    texts: Sequence[tuple[str, str]],
    known: Iterable[tuple[str, str]] = (),
    known_facts: Iterable[tuple[str, str, Mapping[str, object]]] = (),
) -> GroundingContext:
    """`texts`: (role, content) of every message of the session; `known`: (type, name) of
    stored entities and their aliases; `known_facts`: (type, name, metadata) of those whose
    current facts were read."""
    return pacing.run(_context_steps(texts, known, known_facts))


def _pieces(source: str) -> list[str]:
    pieces = [p.strip(" \"'") for p in _ELLIPSIS.split(normalise_text(source))]
    return [p for p in pieces if len(p) >= MIN_PIECE_CHARS]


def source_in_conversation(source: str, ctx: GroundingContext) -> bool:
    pieces = _pieces(source)
    if not pieces:
        return False
    return all(p in ctx.text or normalise_words(p) in ctx.words for p in pieces)


def _core_name(name: str) -> str:
    words = normalise_words(name).split()
    core = [w for w in words if w not in GENERIC_NAME_WORDS]
    return " ".join(core or words)


def check(item: EntityInputBase, ctx: GroundingContext) -> tuple[str, str] | None:
    """Checks on the candidate as a whole: None when it may be kept, else (code, why not)."""
    source = item.source or ""
    if not source.strip():
        return "no_source", "no source excerpt"
    if not source_in_conversation(source, ctx):
        return "source_not_in_conversation", "source excerpt not in the conversation"
    if item.type == CAMPAIGN.type:  # type: ignore[attr-defined]
        core = _core_name(item.name)
        known = ctx.known.get(CAMPAIGN.type, frozenset())
        if core in ctx.business or normalise_words(item.name) in ctx.business:
            return "own_business", "the user's own business is not a campaign"
        if not contains_words(ctx.words, core) and core not in {_core_name(k) for k in known}:
            return "campaign_not_in_conversation", "campaign name not in the conversation"
    return None


def _held(item: EntityInputBase, ctx: GroundingContext) -> dict[str, tuple[float, ...]]:
    """The numbers memory holds for this entity (found by its name or an alias), per field."""
    out: dict[str, tuple[float, ...]] = {}
    for name in (item.name, *item.aliases):
        for path, values in ctx.known_numbers.get((item.type, normalise_words(name)), {}).items():  # type: ignore[attr-defined]
            out[path] = (*out.get(path, ()), *values)
    return out


def _unread(item: EntityInputBase, ctx: GroundingContext) -> bool:
    """The candidate names a known entity whose facts were not read (an extractor that is
    shown names only): its content may restate them, and nothing here can tell."""
    names = {normalise_words(n) for n in (item.name, *item.aliases)}
    known = ctx.known.get(item.type, frozenset())  # type: ignore[attr-defined]
    read = {n for (t, n) in ctx.known_numbers if t == item.type}  # type: ignore[attr-defined]
    return bool(names & known) and not names & read


def _field_failure(
    item: EntityInputBase, path: str, value: float, ctx: GroundingContext
) -> tuple[str, str] | None:
    source = item.source or ""
    meta = item.metadata  # type: ignore[attr-defined]
    held = _held(item, ctx).get(path, ())
    if not ctx.numbers.has(value) and not any(restates(value, h) for h in held):
        why = f"{path} {value:g} is neither in the conversation nor what memory holds"
        return "number_not_in_conversation", why
    is_value = item.type == METRIC.type and path == "value"  # type: ignore[attr-defined]
    if is_value and tied_to_other_kpi(str(meta.kpi), value, source):
        why = f"{value:g} is written as another KPI than {meta.kpi} in the excerpt"
        return "value_tied_to_other_kpi", why
    return None


def _without(item: EntityInputBase, paths: Sequence[str]) -> EntityInputBase:
    """The candidate with these metadata fields removed (unset, so a merge keeps what is
    stored for them)."""
    meta = item.metadata  # type: ignore[attr-defined]
    data = meta.model_dump(by_alias=True, exclude_unset=True, mode="json")
    for path in paths:
        head, _, rest = path.partition(".")
        if rest and isinstance(data.get(head), dict):
            data[head] = {k: v for k, v in data[head].items() if k != rest} or None
        else:
            data.pop(head, None)
    return item.model_copy(update={"metadata": type(meta).model_validate(data)})


CONTENT_CODE = "content_number_not_in_conversation"


def _drop(item: EntityInputBase, field: str, value: float | str, code: str, why: str) -> FieldDrop:
    return FieldDrop(
        type=item.type,  # type: ignore[attr-defined]
        name=item.name,
        field=field,
        value=value,
        code=code,
        reason=f"ungrounded: {why}",
    )


def ground_fields(
    item: EntityInputBase, ctx: GroundingContext
) -> tuple[EntityInputBase | None, list[FieldDrop]]:
    """The candidate with its ungrounded fields removed (None when a metric is left with no
    number at all: a KPI without its value or target says nothing), and what was removed."""
    meta = getattr(item, "metadata", None)
    if meta is None:
        return item, []
    drops: list[FieldDrop] = []
    for path, value in numeric_fields(meta.to_json_dict()):
        failed = _field_failure(item, path, value, ctx)
        if failed is not None:
            drops.append(_drop(item, f"metadata.{path}", value, *failed))
    if drops:
        item = _without(item, [d.field.removeprefix("metadata.") for d in drops])
        is_metric = item.type == METRIC.type  # type: ignore[attr-defined]
        if is_metric and item.metadata.value is None and item.metadata.target is None:  # type: ignore[attr-defined]
            return None, drops
    dropped = [d.value for d in drops if isinstance(d.value, float)]
    restated = [v for v in dropped if mentions_of(v, item.content)]
    held = [v for values in _held(item, ctx).values() for v in values]
    bad = restated
    if not bad and not _unread(item, ctx):
        bad = unsupported_numbers(item.content, ctx.numbers, held)
    if bad:
        why = f"the content states {bad[0]:g}, which the conversation does not support"
        drops.append(_drop(item, "content", item.content, CONTENT_CODE, why))
        # The excerpt is the conversation's own words: true, if less tidy than a summary.
        item = item.model_copy(update={"content": item.source or ""})
    return item, drops


def _ground_steps(items: Sequence[EntityInputBase], ctx: GroundingContext) -> Steps[Grounded]:
    """`ground`, a candidate a step (yielding the characters of its own text: the checks read
    the conversation only through substring searches and `ctx.numbers`)."""
    out = Grounded(kept=[], rejected=[], dropped=[])
    for item in items:
        failed = check(item, ctx)
        kept, drops = (None, []) if failed is not None else ground_fields(item, ctx)
        out.dropped += drops
        yield len(item.name) + len(item.content) + len(item.source or "")
        if kept is not None:
            out.kept.append(kept)
            continue
        if failed is None:
            failed = ("no_number_left", "none of the metric's numbers is in the conversation")
        code, why = failed
        out.rejected.append(
            Rejection(item=item.to_json_dict(), code=code, reason=f"ungrounded: {why}")
        )
    return out


def ground(items: Sequence[EntityInputBase], ctx: GroundingContext) -> Grounded:
    """The grounded candidates (fields that failed removed), a rejection for each candidate
    that failed as a whole, and each field dropped."""
    return pacing.run(_ground_steps(items, ctx))


async def ground_paced(
    items: Sequence[EntityInputBase], messages: Sequence[Message], known: Iterable[KnownEntity],
    pacer: Pacer,
) -> Grounded:  # fmt: skip
    """`ground(items, session_context(messages, known))`, giving other requests their turns
    (`pacer`) while the session's context is built and while each candidate is checked."""
    ctx = await pacer.run(_session_context_steps(messages, known))
    return await pacer.run(_ground_steps(items, ctx))


def _session_context_steps(
    messages: Sequence[Message], known: Iterable[KnownEntity]
) -> Steps[GroundingContext]:
    known = list(known)
    names = [(k.type, n) for k in known for n in (k.name, *k.aliases)]
    facts = [(k.type, n, k.facts) for k in known if k.facts for n in (k.name, *k.aliases)]
    return _context_steps([(m.role, m.content) for m in messages], names, facts)


def session_context(
    messages: Sequence[Message], known: Iterable[KnownEntity] = ()
) -> GroundingContext:
    """The grounding context of one session: its messages, and the known entities' names
    and, where they were read, their current numbers."""
    return pacing.run(_session_context_steps(messages, known))
