"""Storage failures as one retryable error.

A KV or D1 binding that throws or times out (a network blip, an overloaded database) is not a
bug in the request: the client should retry. Wrapping the bindings turns any such failure into
`StorageUnavailable`, which the API answers with 503 `storage_unavailable` and Retry-After,
while our own refusals (`KVError`: a request KV would reject) stay errors of their own.
"""

from __future__ import annotations

from typing import Any

from entity_memory.storage.kv import KVError


class StorageUnavailable(Exception):
    """A storage binding failed or timed out; retrying the request may succeed."""


class Guarded:
    """Forwards every call to `inner`, re-raising storage failures as StorageUnavailable."""

    def __init__(self, inner: Any, what: str) -> None:
        self._inner = inner
        self._what = what

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if not callable(attr):
            return attr

        async def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return await attr(*args, **kwargs)
            except KVError:
                raise
            except Exception as exc:
                raise StorageUnavailable(f"{self._what}.{name} failed: {exc!r}"[:500]) from exc

        return call


def guarded(inner: Any, what: str) -> Any:
    return Guarded(inner, what)
