"""Raw extractor output -> validated entity inputs, or rejections with a reason.

Models add fields nobody asked for; those are dropped here (the schema is the contract), but
anything that fails the schema itself is rejected and reported, never stored. An extractor's
`source` excerpt is kept (it becomes provenance); `provenance` itself is the pipeline's to
write, so an extractor cannot forge it.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from entity_memory.domain.kind import is_kind, kind_of
from entity_memory.domain.models import EntityInputBase

_TOP_LEVEL = set(EntityInputBase.model_fields) | {"type", "metadata"}


def _known_fields(model: type, data: dict[str, Any]) -> dict[str, Any]:
    names = set()
    for name, info in model.model_fields.items():  # type: ignore[attr-defined]
        names.add(name)
        if info.alias:
            names.add(info.alias)
    return {k: v for k, v in data.items() if k in names}


def _reason(exc: ValidationError, entity_type: str) -> str:
    """The first errors, each at its place in the candidate ("campaign.metadata.budget")."""
    parts = []
    for err in exc.errors()[:5]:
        where = (entity_type, *err.get("loc", ()))
        loc = ".".join(str(p) for p in where if not str(p).endswith("Input"))
        parts.append(f"{loc or 'item'}: {err.get('msg')}")
    return "; ".join(parts)


def validate_candidates(
    candidates: list[Any],
) -> tuple[list[EntityInputBase], list[dict[str, Any]]]:
    """Typed inputs for the good candidates; `{"item", "reason"}` for each bad one."""
    accepted: list[EntityInputBase] = []
    rejected: list[dict[str, Any]] = []
    for item in candidates:
        if not isinstance(item, dict):
            rejected.append({"item": item, "reason": "not an object"})
            continue
        entity_type = item.get("type")
        if not is_kind(entity_type):
            rejected.append({"item": item, "reason": f"unknown type {entity_type!r}"})
            continue
        data = {k: v for k, v in item.items() if k in _TOP_LEVEL and v is not None}
        data.pop("id", None)  # ids come from names and resolution, never from a model
        data.pop("provenance", None)  # the pipeline writes provenance, from `source`
        meta = item.get("metadata")
        if isinstance(meta, dict):
            data["metadata"] = _known_fields(
                kind_of(entity_type).metadata_model,
                {k: v for k, v in meta.items() if v is not None},
            )
        if isinstance(data.get("importance"), int | float):
            data["importance"] = min(1.0, max(0.0, float(data["importance"])))
        try:
            accepted.append(kind_of(entity_type).input_model.model_validate(data))
        except ValidationError as exc:
            rejected.append({"item": item, "reason": _reason(exc, entity_type)})
    return accepted, rejected
