"""Python client, CLI, Claude Code hooks and MCP server for the entity-memory Worker."""

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
