"""The JSON schema of the model's reply, generated from the pydantic input models.

One source of truth: the schema a JSON-mode server enforces is the one `validate.py` applies,
minus the fields the server owns (ids, a metric's history, provenance). It is self-contained
(no `$defs`/`$ref`, no `discriminator`/`const`) because grammar-constrained decoders choke on
those; how each backend wraps it in `response_format` is the backend's business.
"""

from __future__ import annotations

import copy
from functools import lru_cache
from typing import Any

from entity_memory.domain.kind import kind_of
from entity_memory.domain.kinds import (
    CampaignInput,
    DecisionInput,
    MetricInput,
    PainPointInput,
    PreferenceInput,
)

#: The name servers want for the schema (`json_schema.name`).
SCHEMA_NAME = "entities"

_INPUT_MODELS = (CampaignInput, MetricInput, DecisionInput, PainPointInput, PreferenceInput)
#: String length bounds stay in the pydantic models (validation applies them) but are left out
#: of the schema a server compiles into a grammar: llama.cpp expands `maxLength: 240` into 240
#: nested optional characters, and generation with such a grammar ran at 1.4-1.9 tokens/s
#: against 10.8-14.5 without (Qwen2.5 1.5B on 2 cores, the same prompts; the budget
#: `max_tokens` bounds the reply instead).
_UNGRAMMATICAL = {"maxLength", "minLength"}
#: Fields the model must not fill: ids come from names and resolution, a metric's history from
#: the ledger.
_SERVER_FIELDS = {"id", "provenance"}
_DROP_KEYS = {"title", "default", "discriminator", "propertyNames", *_UNGRAMMATICAL}


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    """Resolve `$ref`s into copies, drop what JSON-mode servers choke on, `const` -> `enum`."""
    if isinstance(node, list):
        return [_inline(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = _inline(defs[ref.removeprefix("#/$defs/")], defs)
        target.pop("description", None)  # a class docstring, not guidance for the model
        out.update(target)
    for key, value in node.items():
        if key in _DROP_KEYS or key in ("$ref", "$defs"):
            continue
        if key == "const":
            out["enum"] = [value]
        elif key in ("properties", "patternProperties"):
            out[key] = {name: _inline(sub, defs) for name, sub in value.items()}
        else:
            out[key] = _inline(value, defs)
    return out


def _item_schema(model: type) -> dict[str, Any]:
    raw = model.model_json_schema(by_alias=True)  # type: ignore[attr-defined]
    schema = _inline(raw, raw.get("$defs", {}))
    entity_type = schema["properties"]["type"]["enum"][0]
    props = schema["properties"]
    for name in _SERVER_FIELDS:
        props.pop(name, None)
    meta = props["metadata"]
    for name in kind_of(entity_type).server_fields:
        meta.get("properties", {}).pop(name, None)
        if name in meta.get("required", []):
            meta["required"].remove(name)
    # The prompt asks for all six; grammar-constrained decoders then always write them, in
    # this order (they follow the order of `properties`). `source` is optional for an API
    # client but never for a model: grounding rejects an item without one, so the schema
    # says it is a string, not null.
    props["source"] = {"type": "string"}
    order = ["type", "name", "content", "importance", "metadata", "source"]
    schema["properties"] = {k: props[k] for k in [*order, *sorted(set(props) - set(order))]}
    schema["required"] = order
    schema.pop("description", None)
    schema["additionalProperties"] = False
    return schema


@lru_cache(maxsize=1)
def _entities_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "entities": {
                "type": "array",
                "items": {"anyOf": [_item_schema(m) for m in _INPUT_MODELS]},
            }
        },
        "required": ["entities"],
        "additionalProperties": False,
    }


def entities_json_schema() -> dict[str, Any]:
    """JSON schema of `{"entities": [...]}` from the pydantic input models, self-contained
    (no `$defs`/`$ref`, no `discriminator`/`const`), for `response_format`."""
    return copy.deepcopy(_entities_schema())


def inline_schema(raw: dict[str, Any]) -> dict[str, Any]:
    """A pydantic model's JSON schema made self-contained, as `response_format` needs it."""
    return _inline(raw, raw.get("$defs", {}))
