"""Per-user API tokens, minted and revoked by the admin token."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from entity_memory.domain.keys import validate_id
from entity_memory.http.deps import AdminTokensDep, BindingsDep
from entity_memory.http.errors import ApiError
from entity_memory.http.schemas import CreatedToken, Revoked, TokenBody, TokenList

router = APIRouter(prefix="/v1/admin/tokens", tags=["admin"])


@router.post("", status_code=201, response_model=CreatedToken)
async def create_token(body: TokenBody, tokens: AdminTokensDep, b: BindingsDep) -> dict[str, Any]:
    """Mint a token scoped to one user. The token is in this response only."""
    validate_id(body.user_id, "user")
    return await tokens.create(body.user_id, body.label, b.clock())


@router.get("", response_model=TokenList)
async def list_tokens(tokens: AdminTokensDep, user_id: str | None = None) -> dict[str, Any]:
    if user_id is not None:
        validate_id(user_id, "user")
    return {"tokens": await tokens.list(user_id)}


@router.delete("/{token_id}", response_model=Revoked)
async def revoke_token(token_id: str, tokens: AdminTokensDep, b: BindingsDep) -> dict[str, Any]:
    validate_id(token_id, "token")
    if not await tokens.revoke(token_id, b.clock()):
        raise ApiError(404, "not_found", f"no live token {token_id!r}")
    return {"revoked": token_id}
