"""Request budgets counted in this isolate, on the request's clock.

The platform's `[[ratelimits]]` binding is approximate by design: it counts in fixed windows
(a burst that straddles a window boundary gets up to twice the limit in 60 s), per Cloudflare
location, and eventually consistently (a burst overshoots while the counter syncs). The budget
the README documents ("600 a minute") is therefore also enforced here, exactly, as a sliding
window: no more than `limit` admitted events in any `period_ms`. Across isolates and locations
the binding remains the backstop.

The count is monotonic per key: a time older than the newest a key has seen counts as that
newest time, so requests that reach the window out of order (concurrent ones, whose token
lookups finish in any order) and a clock that steps back can never empty a full window.
Counting is on the Worker's clock, never on a time a request states
(`X-Entity-Memory-Now` moves the data's clock only): a test passes its own clock to the
bindings to pin it.
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

#: Every budget here is per minute, as the binding's `period = 60` in wrangler.toml.
PERIOD_MS = 60_000
#: A token's requests per minute (README, and the `[[ratelimits]]` binding's `limit`).
DEFAULT_REQUESTS_PER_MINUTE = 600
#: Failed authentications per minute from one address before its unverified credentials are
#: refused without a lookup (a valid token is never refused for it: `service.auth`).
DEFAULT_FAILED_AUTH_PER_MINUTE = 30
#: The var that sets a token's budget (a test host runs with a small one).
REQUESTS_PER_MINUTE_VAR = "RATE_LIMIT_PER_MINUTE"
#: Keys remembered per window, at most (least recently used forgotten first): an isolate's
#: memory stays bounded (8 bytes a slot) whatever a flood of addresses or tokens does.
MAX_KEYS = 2_000
_NEVER = -(2**62)


class Budgets(BaseModel):
    model_config = ConfigDict(frozen=True)

    requests_per_minute: int = Field(default=DEFAULT_REQUESTS_PER_MINUTE, ge=1)
    failed_auth_per_minute: int = Field(default=DEFAULT_FAILED_AUTH_PER_MINUTE, ge=1)

    @classmethod
    def from_vars(cls, env: Mapping[str, Any]) -> Budgets:
        """Budgets from the Worker's vars; a bad value fails loudly, as other settings do."""
        raw = str(env.get(REQUESTS_PER_MINUTE_VAR) or "").strip()
        if not raw:
            return cls()
        if not raw.isdigit() or int(raw) < 1:
            raise ValueError(f"{REQUESTS_PER_MINUTE_VAR} must be a positive integer, not {raw!r}")
        return cls(requests_per_minute=int(raw))


class _Slots:
    """The times of a key's last `limit` admitted events, as a ring (oldest at `head`)."""

    __slots__ = ("head", "newest", "times")

    def __init__(self, limit: int) -> None:
        self.times = array("q", [_NEVER]) * limit
        self.head = 0
        self.newest = _NEVER


class SlidingWindow:
    """At most `limit` events per key in any `period_ms` (exact, within this isolate)."""

    def __init__(self, limit: int, period_ms: int = PERIOD_MS, max_keys: int = MAX_KEYS) -> None:
        self.limit, self.period_ms, self.max_keys = limit, period_ms, max_keys
        self._keys: dict[str, _Slots] = {}

    def _slots(self, key: str) -> _Slots:
        slots = self._keys.pop(key, None)
        if slots is None:
            slots = _Slots(self.limit)
            if len(self._keys) >= self.max_keys:
                self._keys.pop(next(iter(self._keys)))
        self._keys[key] = slots  # most recently used last
        return slots

    def _now(self, key: str, now_ms: int) -> int:
        """The key's time: never earlier than the newest event it has counted."""
        slots = self._keys.get(key)
        return now_ms if slots is None else max(now_ms, slots.newest)

    def full(self, key: str, now_ms: int) -> bool:
        """Whether one more event now would exceed the budget (nothing is recorded)."""
        slots = self._keys.get(key)
        if slots is None:
            return False
        return slots.times[slots.head] > self._now(key, now_ms) - self.period_ms

    def hit(self, key: str, now_ms: int) -> bool:
        """Record an event now if the budget allows it; False (nothing recorded) if not."""
        if self.full(key, now_ms):
            return False
        now_ms = self._now(key, now_ms)
        slots = self._slots(key)
        slots.times[slots.head] = now_ms
        slots.head = (slots.head + 1) % self.limit
        slots.newest = now_ms
        return True

    def retry_after_ms(self, key: str, now_ms: int) -> int:
        """How long until the key's budget admits one more event (0: it does now)."""
        if not self.full(key, now_ms):
            return 0
        slots = self._keys[key]
        return slots.times[slots.head] + self.period_ms - self._now(key, now_ms)
