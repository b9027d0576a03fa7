"""Python client, CLI, Claude Code hooks and MCP server for the entity-memory Worker."""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .client import (
        AsyncEntityMemory,
        ConnectionFailed,
        EntityMemory,
        EntityMemoryError,
        InvalidId,
        InvalidRequest,
        InvalidType,
        LedgerUnavailable,
        NotFound,
        RateLimited,
        ServerError,
        TooLarge,
        Unauthorized,
    )

__version__ = "0.1.0"
__all__ = [
    "AsyncEntityMemory",
    "ConnectionFailed",
    "EntityMemory",
    "EntityMemoryError",
    "InvalidId",
    "InvalidRequest",
    "InvalidType",
    "LedgerUnavailable",
    "NotFound",
    "RateLimited",
    "ServerError",
    "TooLarge",
    "Unauthorized",
]


def __getattr__(name: str) -> Any:
    # Lazy, so `entity-memory hook stop` (run after every response) does not import httpx.
    if name in __all__:
        from . import client

        return getattr(client, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
