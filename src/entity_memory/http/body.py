"""Bodies a route parses itself, where the schema alone cannot give the right error code
(a bad entity id is 400 `invalid_id`, an oversized batch 413, a plain-text transcript)."""

from __future__ import annotations

from typing import Any, TypeVar

from fastapi import Request
from pydantic import BaseModel, ValidationError

from entity_memory.domain import safe_json
from entity_memory.http.errors import ApiError, naming_first_problem, pydantic_details

Body = TypeVar("Body", bound=BaseModel)


async def read_json(request: Request) -> Any:
    """The body as JSON (the middleware has already bounded its size and depth)."""
    body = await request.body()
    try:
        return safe_json.loads(body or b"null")
    except safe_json.JsonTooDeep as exc:
        raise ApiError(400, "json_too_deep", str(exc)) from exc
    except ValueError as exc:
        raise ApiError(400, "invalid_json", f"request body is not JSON: {exc}") from exc


def parse(model: type[Body], raw: Any, code: str, message: str) -> Body:
    """`raw` as `model`, or a 422 whose message names the first problem and whose details list
    them all."""
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        details = pydantic_details(exc)
        raise ApiError(422, code, naming_first_problem(message, details), details) from exc


def openapi_body(model: type[BaseModel], *, text: bool = False) -> dict[str, Any]:
    """The OpenAPI request body of a route that reads its body itself."""
    content: dict[str, Any] = {
        "application/json": {
            "schema": model.model_json_schema(ref_template="#/components/schemas/{model}")
        }
    }
    if text:
        content["text/plain"] = {"schema": {"type": "string"}}
    return {"requestBody": {"required": True, "content": content}}
