"""The HTTP API agents call: FastAPI, served in the Worker through the SDK's ASGI bridge.

This module only assembles the app: the middleware (`middleware.py`), the error table
(`errors.py`), the dependencies (`deps.py`) and one router per area (`routers/`), those a
typical request does not use imported on first use (`lazy_routes.py`). Routes are
`async def`: Pyodide has no threads for sync routes. Each response carries
`X-KV-Operations`, the KV calls it cost, because KV is billed per call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI

from entity_memory import __version__
from entity_memory.http.errors import install_error_handlers
from entity_memory.http.lazy_routes import install_lazy_routers
from entity_memory.http.middleware import install_guard
from entity_memory.http.routers import context_request, entities, meta
from entity_memory.service.bindings import Bindings

if TYPE_CHECKING:
    from entity_memory.extraction.base import Extractor
    from entity_memory.extraction.registry import ExtractorBindings, ExtractorFactory

#: What most requests use: included when the app is built.
ROUTERS = (meta, entities, context_request)
#: Imported and included on first use (lazy_routes.py): start-up pays only for the above.
LAZY_ROUTERS = tuple(
    f"entity_memory.http.routers.{name}"
    for name in ("inspector", "admin", "extraction", "history", "sessions", "repairs")
)


def build_extractor(name: str, bindings: ExtractorBindings) -> Extractor:
    """extraction.registry.build_extractor, imported when an extraction first needs it: the
    extractors and their LLM clients are no part of a start-up."""
    from entity_memory.extraction.registry import build_extractor as build

    return build(name, bindings)


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
    install_lazy_routers(app, LAZY_ROUTERS)
    return app
