"""Who may call what: the admin token, per-user tokens, the scope of each, and their budgets.

The admin token (`API_TOKEN` secret) may call everything. A user token, minted by an admin, is
stored only as a SHA-256 hash in D1 and may call only `/v1/users/<its user>/...`, so an agent
holding user A's token cannot read, write, export or delete user B. With no `API_TOKEN` set the
service is open (local development) and admin routes are open too: production sets it.

A user token ends in a tag, an HMAC of the rest under a key derived from `API_TOKEN`, so a
made-up token is told from a minted one without any I/O. That is what lets failed-auth
throttling protect D1 without locking anyone out: an address that sent too many bad
credentials has its *untagged* ones refused before any lookup, while the admin token and
tagged tokens are always checked on their merits. (Tokens minted before tags, or under an
earlier `API_TOKEN`, still work: they take the throttled path.)
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from entity_memory.service.rate_limits import MAX_KEYS, PERIOD_MS, Budgets, SlidingWindow
from entity_memory.settings import RateLimit
from entity_memory.storage.d1 import D1Database

TOKEN_PREFIX = "emu_"
#: Routes only the admin token reaches.
ADMIN_PREFIX = "/v1/admin"
#: What the tag key is derived for (a new purpose would get a new context, never the same key).
_TAG_CONTEXT = b"entity-memory/user-token-tag/v1"
_TAG_BYTES = 16


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
        if is_admin_path(path):
            return False
        own = f"/v1/users/{self.user_id}"
        return path == own or path.startswith(own + "/")


def is_admin_path(path: str) -> bool:
    return path == ADMIN_PREFIX or path.startswith(ADMIN_PREFIX + "/")


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _tag(admin_token: str, body: str) -> str:
    key = hmac.new(admin_token.encode(), _TAG_CONTEXT, hashlib.sha256).digest()
    digest = hmac.new(key, body.encode(), hashlib.sha256).digest()[:_TAG_BYTES]
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def mint_token(admin_token: str | None = None) -> tuple[str, str]:
    """(token id, token). The id is public (listing, revoking); the token is shown once.
    Tagged when the deployment has an admin token (the open mode has nothing to key it)."""
    token_id = secrets.token_hex(6)
    body = f"{TOKEN_PREFIX}{token_id}_{secrets.token_urlsafe(32)}"
    return token_id, body if admin_token is None else f"{body}.{_tag(admin_token, body)}"


def has_valid_tag(token: str, admin_token: str) -> bool:
    """Whether this deployment minted the token (it may still be revoked: D1 says)."""
    body, dot, tag = token.rpartition(".")
    if not dot or not body.startswith(TOKEN_PREFIX):
        return False
    return hmac.compare_digest(tag.encode(), _tag(admin_token, body).encode())


def bearer(header: str | None) -> str | None:
    scheme, _, credential = (header or "").partition(" ")
    credential = credential.strip()
    return credential if scheme.lower() == "bearer" and credential else None


class TokenStore:
    def __init__(self, db: D1Database, admin_token: str | None = None) -> None:
        self.db = db
        self.admin_token = admin_token

    async def create(self, user_id: str, label: str | None, now: int) -> dict[str, Any]:
        token_id, token = mint_token(self.admin_token)
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

    async def forget_user(self, user_id: str) -> list[str]:
        """Delete the user's tokens with their labels (not merely revoke: erasure leaves no
        row naming the user); the ids deleted (the writer refuses what they authorised)."""
        rows = await self.db.all(
            "DELETE FROM api_tokens WHERE user_id = ? RETURNING token_id", (user_id,)
        )
        return [str(r["token_id"]) for r in rows]

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


class Refusal(BaseModel):
    """Why a request is turned away before any route runs (the HTTP layer renders it)."""

    model_config = ConfigDict(frozen=True)

    status: int
    code: str
    message: str
    headers: dict[str, str] = Field(default_factory=dict)


class Caller(BaseModel):
    """What admission reads of a request."""

    model_config = ConfigDict(frozen=True)

    authorization: str | None = None
    #: The client's address (the platform's `CF-Connecting-IP`).
    address: str
    #: The encoded path: "ann%2Fbob" must not pass as a path under "ann/".
    raw_path: str


UNAUTHORIZED = Refusal(
    status=401,
    code="unauthorized",
    message="missing, wrong or revoked bearer token",
    headers={"WWW-Authenticate": 'Bearer realm="entity-memory"'},
)
FORBIDDEN = Refusal(status=403, code="forbidden", message="this token is for another user")
#: A user's token on an admin route: same code, but the message says what the route needs.
ADMIN_ONLY = Refusal(
    status=403,
    code="forbidden",
    message="this is an admin route: it needs the admin token (API_TOKEN), not a user's token",
)


def _too_many(message: str, retry_after_ms: int) -> Refusal:
    seconds = max(1, -(-retry_after_ms // 1000))
    return Refusal(
        status=429, code="rate_limited", message=message, headers={"Retry-After": str(seconds)}
    )


class Admission:
    """Authentication, scope and budgets for one isolate's requests (one per app).

    Counts live in this isolate (`service.rate_limits`); the rate-limit binding, when bound,
    is consulted after them as the cross-isolate backstop. The clock is read when an event is
    counted, after any await (a token lookup), so concurrent requests are counted at the times
    they reach the window; the window is monotonic besides, so no order of arrival resets it.
    """

    def __init__(self, budgets: Budgets) -> None:
        self.budgets = budgets
        self.requests = SlidingWindow(budgets.requests_per_minute)
        self.failures = SlidingWindow(budgets.failed_auth_per_minute)
        #: Addresses the binding found over their failed-auth budget: held for one period.
        self.held = SlidingWindow(1)
        #: Tagged tokens D1 does not hold live: revoked or deleted, which is final, so they
        #: need no second lookup (hashes, oldest forgotten first).
        self.dead: dict[str, None] = {}

    async def admit(
        self,
        caller: Caller,
        admin_token: str | None,
        tokens: TokenStore | None,
        rate_limit: RateLimit | None,
        clock: Callable[[], int],
    ) -> Principal | Refusal:
        """The caller's principal, or why it is turned away. `clock` is the Worker's own
        (epoch ms), never a time the request states."""
        if admin_token is None:
            return Principal("open")
        given = bearer(caller.authorization)
        if given is not None and hmac.compare_digest(given.encode(), admin_token.encode()):
            principal: Principal | None = Principal("admin")
        elif given is not None and has_valid_tag(given, admin_token):
            principal = await self._tagged(given, tokens)
            if principal is None:
                return UNAUTHORIZED
        else:
            wait = self._held_for(caller.address, clock())
            if wait:
                return _too_many(
                    "too many failed authentications from this address; retry later", wait
                )
            principal = None if given is None or tokens is None else await tokens.lookup(given)
            if principal is None:
                await self._failed(caller.address, clock, rate_limit)
                return UNAUTHORIZED
        if not principal.may_access(caller.raw_path):
            return ADMIN_ONLY if is_admin_path(caller.raw_path) else FORBIDDEN
        return await self._within_budget(principal, clock, rate_limit)

    async def _tagged(self, token: str, tokens: TokenStore | None) -> Principal | None:
        digest = hash_token(token)
        if tokens is None or digest in self.dead:
            return None
        principal = await tokens.lookup(token)
        if principal is None:
            if len(self.dead) >= MAX_KEYS:
                self.dead.pop(next(iter(self.dead)))
            self.dead[digest] = None
        return principal

    def _held_for(self, address: str, now_ms: int) -> int:
        """How long this address's unverified credentials are still refused (0: not)."""
        return max(
            self.failures.retry_after_ms(address, now_ms), self.held.retry_after_ms(address, now_ms)
        )

    async def _failed(
        self, address: str, clock: Callable[[], int], rate_limit: RateLimit | None
    ) -> None:
        self.failures.hit(address, clock())
        if rate_limit is not None and not await rate_limit(f"unauthenticated:{address}"):
            self.held.hit(address, clock())

    async def _within_budget(
        self, principal: Principal, clock: Callable[[], int], rate_limit: RateLimit | None
    ) -> Principal | Refusal:
        key = principal.rate_key
        if key is None:
            return principal
        message = "too many requests for this token; retry later"
        now_ms = clock()
        if not self.requests.hit(key, now_ms):
            return _too_many(message, self.requests.retry_after_ms(key, now_ms))
        if rate_limit is not None and not await rate_limit(key):
            return _too_many(message, PERIOD_MS)
        return principal


def admission_for(holder: object, env: Mapping[str, Any]) -> Admission:
    """The isolate's admission, kept on `holder` (the app's state), made on first use."""
    found = getattr(holder, "admission", None)
    if not isinstance(found, Admission):
        found = Admission(Budgets.from_vars(env))
        setattr(holder, "admission", found)  # noqa: B010 (Starlette's State is set by name)
    return found
