"""The HTTP API agents call: FastAPI, served in the Worker through the SDK's ASGI bridge.

This module only assembles the app: the middleware (`middleware.py`), the error table
(`errors.py`), the dependencies (`deps.py`) and one router per area (`routers/`). Routes are
`async def`: Pyodide has no threads for sync routes. Each response carries
`X-KV-Operations`, the KV calls it cost, because KV is billed per call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI

from entity_memory import __version__
from entity_memory.extraction.registry import ExtractorFactory, build_extractor
from entity_memory.http.errors import install_error_handlers
from entity_memory.http.middleware import install_guard
from entity_memory.http.routers import (
    admin,
    context,
    entities,
    extraction,
    inspector,
    ledger,
    maintenance,
    meta,
    sessions,
)
from entity_memory.service.bindings import Bindings

ROUTERS = (
    inspector,
    meta,
    entities,
    context,
    admin,
    extraction,
    ledger,
    sessions,
    maintenance,
)


def create_app(
    bind: Callable[[Any], Bindings],
    extractor_factory: ExtractorFactory = build_extractor,
) -> FastAPI:
    """Build the app; `bind(env)` turns the host's env (Worker env, or None) into Bindings.
    Writes go to the user's writer (`Bindings.writers`), which does not run this app."""
    app = FastAPI(
        title="entity-memory",
        version=__version__,
        description="Long-term memory of named, typed entities for AI agents.",
        # No 307 to the path without its trailing slash: the redirect is built from the
        # decoded path, so `.../jobs/%252e%252e/` pointed a client at `.../jobs/%2e%2e`,
        # which its URL parser resolves to the user's root (whose DELETE is the erasure).
        redirect_slashes=False,
    )
    app.state.bind = bind
    app.state.extractor_factory = extractor_factory
    install_guard(app)
    install_error_handlers(app)
    for module in ROUTERS:
        app.include_router(module.router)
    return app
