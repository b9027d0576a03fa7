"""Who may call what: the admin token, per-user tokens, and the scope of each.

The admin token (`API_TOKEN` secret) may call everything. A user token, minted by an admin, is
stored only as a SHA-256 hash in D1 and may call only `/v1/users/<its user>/...`, so an agent
holding user A's token cannot read, write, export or delete user B. With no `API_TOKEN` set the
service is open (local development) and admin routes are open too: production sets it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Any

from entity_memory.storage.d1 import D1Database

TOKEN_PREFIX = "emu_"


@dataclass(frozen=True)
class Principal:
    kind: str  # "admin" | "user" | "open"
    user_id: str | None = None
    token_id: str | None = None

    @property
    def rate_key(self) -> str | None:
        """What a rate limit counts against: the token (the open mode is not limited)."""
        if self.kind == "admin":
            return "admin"
        return f"token:{self.token_id}" if self.kind == "user" else None

    def may_access(self, path: str) -> bool:
        if self.kind in ("admin", "open"):
            return True
        if path.startswith("/v1/admin"):
            return False
        own = f"/v1/users/{self.user_id}"
        return path == own or path.startswith(own + "/")


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def mint_token() -> tuple[str, str]:
    """(token id, token). The id is public (listing, revoking); the token is shown once."""
    token_id = secrets.token_hex(6)
    return token_id, f"{TOKEN_PREFIX}{token_id}_{secrets.token_urlsafe(32)}"


def bearer(header: str | None) -> str | None:
    scheme, _, credential = (header or "").partition(" ")
    credential = credential.strip()
    return credential if scheme.lower() == "bearer" and credential else None


class TokenStore:
    def __init__(self, db: D1Database) -> None:
        self.db = db

    async def create(self, user_id: str, label: str | None, now: int) -> dict[str, Any]:
        token_id, token = mint_token()
        await self.db.all(
            "INSERT INTO api_tokens (token_id, token_hash, user_id, label, created_at)"
            " VALUES (?, ?, ?, ?, ?)",
            (token_id, hash_token(token), user_id, label, now),
        )
        return {
            "token": token,
            "tokenId": token_id,
            "userId": user_id,
            "label": label,
            "createdAt": now,
        }

    async def lookup(self, token: str) -> Principal | None:
        """The live token's principal; None for unknown or revoked tokens (one D1 read)."""
        if not token.startswith(TOKEN_PREFIX):
            return None
        rows = await self.db.all(
            "SELECT token_id, user_id FROM api_tokens WHERE token_hash = ? AND revoked_at IS NULL",
            (hash_token(token),),
        )
        return Principal("user", rows[0]["user_id"], rows[0]["token_id"]) if rows else None

    async def revoke(self, token_id: str, now: int) -> bool:
        rows = await self.db.all(
            "UPDATE api_tokens SET revoked_at = ? WHERE token_id = ? AND revoked_at IS NULL"
            " RETURNING token_id",
            (now, token_id),
        )
        return bool(rows)

    async def forget_user(self, user_id: str) -> int:
        """Delete the user's tokens with their labels (not merely revoke: erasure leaves no
        row naming the user); the number deleted."""
        rows = await self.db.all(
            "DELETE FROM api_tokens WHERE user_id = ? RETURNING token_id", (user_id,)
        )
        return len(rows)

    async def list(self, user_id: str | None = None) -> list[dict[str, Any]]:
        sql = "SELECT token_id, user_id, label, created_at, revoked_at FROM api_tokens"
        rows = await (
            self.db.all(sql + " WHERE user_id = ? ORDER BY created_at", (user_id,))
            if user_id
            else self.db.all(sql + " ORDER BY created_at")
        )
        return [
            {
                "tokenId": r["token_id"],
                "userId": r["user_id"],
                "label": r["label"],
                "createdAt": r["created_at"],
                "revokedAt": r["revoked_at"],
            }
            for r in rows
        ]


async def authenticate(
    header: str | None, admin_token: str | None, tokens: TokenStore | None
) -> Principal | None:
    """The caller's principal, or None when a token is required and none valid was given."""
    if admin_token is None:
        return Principal("open")
    given = bearer(header)
    if given is None:
        return None
    if hmac.compare_digest(given.encode(), admin_token.encode()):
        return Principal("admin")
    return None if tokens is None else await tokens.lookup(given)


#: Addresses remembered as over their failed-auth budget, at most (oldest forgotten first).
MAX_BLOCKED_ADDRESSES = 10_000


class FailedAuthGuard:
    """Rate limits failed authentication per client address.

    Every request with a user token costs a D1 lookup before anyone knows it is bad, so a
    flood of made-up tokens would cost D1 reads without end. Each failure is counted against
    its address in the rate-limit binding; an address over budget is remembered here (per
    isolate) and refused with 429 before any lookup until its period ends.
    """

    def __init__(self) -> None:
        self._blocked: dict[str, int] = {}

    def blocked(self, address: str, now_ms: int) -> bool:
        until = self._blocked.get(address)
        if until is None:
            return False
        if until <= now_ms:
            del self._blocked[address]
            return False
        return True

    def block(self, address: str, until_ms: int) -> None:
        if len(self._blocked) >= MAX_BLOCKED_ADDRESSES:
            self._blocked.pop(next(iter(self._blocked)))
        self._blocked[address] = until_ms


FAILED_AUTH = FailedAuthGuard()
