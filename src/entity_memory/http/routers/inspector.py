"""Routes serving the web inspector (`/`, its script modules and stylesheet); no API of its own.

The page talks only to the public `/v1` API with the token the user signs in with, so these
routes need no auth. The CSP allows only this origin: no inline script, no CDN, no frames.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import APIRouter
from fastapi.responses import Response

from entity_memory.web import ASSETS, Asset, read_asset
from entity_memory.web.kinds_js import MEDIA_TYPE, URL, kinds_module

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
    " connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    # Short: a deploy changes the assets, and they are small.
    "Cache-Control": "public, max-age=300",
}

router = APIRouter(include_in_schema=False)


def _serve(asset: Asset) -> Callable[[], Awaitable[Response]]:
    async def endpoint() -> Response:
        return Response(read_asset(asset.path), media_type=asset.media_type, headers=_HEADERS)

    return endpoint


async def _kinds() -> Response:
    return Response(kinds_module(), media_type=MEDIA_TYPE, headers=_HEADERS)


for _url, _asset in ASSETS.items():
    router.add_api_route(_url, _serve(_asset), methods=["GET"])
router.add_api_route(URL, _kinds, methods=["GET"])
