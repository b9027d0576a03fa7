"""The model's reply -> raw entity items, leniently.

Models produce JSON in many wrappings: a bare object, a code fence, prose before or after, a bare
list, or (Workers AI in JSON mode) an object that is already parsed. `parse_output` accepts all
of these and finds the entity list. Items come back as raw dicts (the SPEC's prompt shape);
items that are not objects, have no valid `type` or no `name` are rejected here with a reason,
and `validate.py` applies the pydantic models to the rest before anything is stored.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from entity_memory.domain import safe_json
from entity_memory.domain.kind import is_kind, type_for_word
from entity_memory.extraction.base import Usage

#: Positions tried when looking for the JSON value inside a reply.
_MAX_DECODE_STARTS = 64


class OutputError(ValueError):
    """The model's reply holds no usable entity list."""


_FENCE = re.compile(r"```[ \t]*[A-Za-z0-9_-]*[ \t]*\r?\n?(.*?)(?:```|\Z)", re.DOTALL)
_OPENERS = re.compile(r"[\[{]")


def _looks_like_entity(value: Any) -> bool:
    return isinstance(value, dict) and "type" in value and "name" in value


def _usable(value: Any) -> bool:
    if isinstance(value, list):
        return all(isinstance(item, dict) for item in value)
    return isinstance(value, dict) and ("entities" in value or _looks_like_entity(value))


def _closing(text: str, start: int) -> int | None:
    """The index after the bracket that closes the one at `start` (strings respected), or
    None when the text ends first."""
    depth = 0
    in_string = escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


_JSON_START = re.compile(r'[{]\s*(?:"|\}|$)|\[\s*(?:[{\["\]\d-]|$)')


def _decode_first(text: str) -> Any:
    """The first top-level JSON object or array in `text` that holds entities, ignoring prose
    around it; failing that, the first JSON value found. A JSON value that is cut off (a
    truncated reply) is an `OutputError`, not a reason to salvage the objects inside it."""
    first: Any = None
    found = False
    pos = 0
    for _ in range(_MAX_DECODE_STARTS):
        match = _OPENERS.search(text, pos)
        if match is None:
            break
        start = match.start()
        end = _closing(text, start)
        if end is None:
            if _JSON_START.match(text, start):
                raise OutputError("the JSON is cut off (truncated reply)")
            pos = start + 1  # a stray bracket in prose
            continue
        try:
            value = safe_json.loads(text[start:end])
        except ValueError:
            pos = end  # bracketed, but not JSON: skip all of it
            continue
        if _usable(value):
            return value
        if not found:
            first, found = value, True
        pos = end
    if found:
        return first
    raise OutputError("no JSON object in the reply" if text.strip() else "empty reply")


def _to_items(value: Any) -> list[Any]:
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        if "entities" in value:
            entities = value["entities"]
            if isinstance(entities, list):
                return entities
            if isinstance(entities, dict):
                return [entities]
            if entities is None:
                return []
            raise OutputError('"entities" is not a list')
        if _looks_like_entity(value):
            return [value]
        raise OutputError('no "entities" key in the JSON object')
    raise OutputError(f"the reply is JSON {type(value).__name__}, not an object")


def parse_output(raw: Any) -> list[Any]:
    """The items of the model's reply: text (fenced, with prose around it, a bare list) or
    already-parsed JSON. Raises `OutputError` when there is no entity list to be found."""
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", errors="replace")
    if not isinstance(raw, str):
        return _to_items(raw)
    text = raw.strip()
    try:  # the common case: exactly one JSON value
        value = safe_json.loads(text)
    except ValueError:
        pass
    else:
        return _to_items(value)
    errors: list[str] = []
    for block in _FENCE.findall(text):
        try:
            return _to_items(_decode_first(block))
        except OutputError as exc:
            errors.append(str(exc))
    try:
        return _to_items(_decode_first(text))
    except OutputError as exc:
        raise OutputError(errors[0] if errors else str(exc)) from None


def normalise_type(value: Any) -> str | None:
    """`"PAIN_POINT"`, `"Pain point"`, `"pain-point"`, `"campaigns"` -> the type, else None."""
    if not isinstance(value, str):
        return None
    key = re.sub(r"[\s\-]+", "_", value.strip().lower())
    key = type_for_word(key.replace("_", "")) or key
    if not is_kind(key) and key.endswith("s") and is_kind(key[:-1]):
        key = key[:-1]
    return key if is_kind(key) else None


def split_items(items: Sequence[Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Raw candidates (type normalised) and `{"item", "reason"}` rejections."""
    candidates: list[dict[str, Any]] = []
    rejected: list[dict[str, Any]] = []
    for item in items:
        if not isinstance(item, dict):
            rejected.append({"item": item, "reason": "not an object"})
            continue
        entity_type = normalise_type(item.get("type"))
        if entity_type is None:
            raw_type = item.get("type")
            reason = "missing type" if raw_type is None else f"unknown type {raw_type!r}"
            rejected.append({"item": item, "reason": reason})
            continue
        name = item.get("name")
        if not isinstance(name, str) or not name.strip():
            reason = "missing name" if name is None else f"invalid name {name!r}"
            rejected.append({"item": item, "reason": reason})
            continue
        candidates.append({**item, "type": entity_type})
    return candidates, rejected


# --- usage and the retry loop ------------------------------------------------------------------


def usage_from(report: Any) -> Usage | None:
    """`{"prompt_tokens", "completion_tokens"}` (OpenAI and Workers AI) -> Usage."""
    if not isinstance(report, dict):
        return None
    prompt = report.get("prompt_tokens", report.get("input_tokens"))
    completion = report.get("completion_tokens", report.get("output_tokens"))
    if not isinstance(prompt, int | float) and not isinstance(completion, int | float):
        return None
    return Usage(
        input_tokens=int(prompt) if isinstance(prompt, int | float) else 0,
        output_tokens=int(completion) if isinstance(completion, int | float) else 0,
    )
