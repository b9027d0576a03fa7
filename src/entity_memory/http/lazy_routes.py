"""Routers imported on first use, so a Worker's start-up pays only for the routes it serves.

Start-up CPU is limited on Python Workers, and FastAPI builds every route's models when a
router is included. The routers a typical request uses (entities, context, health) are
included at once; the others (the inspector's page, extraction and its jobs, the ledger,
sessions, tokens, maintenance) are imported and included the first time a request matches no
route already included, or when the OpenAPI document is built. Their paths are not repeated
here: the router itself says, once it is loaded, whether it serves the request.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI
from starlette.routing import Match
from starlette.types import ASGIApp, Receive, Scope, Send


class LazyRouters:
    """The routers of `modules` (dotted names of modules with a `router`), loaded once."""

    def __init__(self, app: FastAPI, modules: tuple[str, ...]) -> None:
        self.app, self.modules, self.loaded = app, modules, not modules

    def load(self) -> None:
        if self.loaded:
            return
        self.loaded = True
        for name in self.modules:
            self.app.include_router(importlib.import_module(name).router)

    def serves(self, scope: Scope) -> bool:
        """Whether a route already included answers this request (path and method)."""
        return any(route.matches(scope)[0] is Match.FULL for route in self.app.router.routes)


class LoadOnMiss:
    """ASGI middleware: loads the lazy routers before routing a request none of the loaded
    routes serves. Routes are read per request, so the request itself then finds its route."""

    def __init__(self, app: ASGIApp, routers: LazyRouters) -> None:
        self.inner, self.routers = app, routers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self.routers.loaded and not self.routers.serves(scope):
            self.routers.load()
        await self.inner(scope, receive, send)


def install_lazy_routers(app: FastAPI, modules: tuple[str, ...]) -> LazyRouters:
    routers = LazyRouters(app, modules)
    app.add_middleware(LoadOnMiss, routers=routers)
    build_openapi: Callable[[], dict[str, Any]] = app.openapi

    def openapi() -> dict[str, Any]:
        routers.load()  # the document lists every route, loaded or not
        return build_openapi()

    app.openapi = openapi  # type: ignore[method-assign]
    return routers
