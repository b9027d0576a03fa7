"""Routes serving the web inspector (`/`, its script and stylesheet); no API of its own.

The page talks only to the public `/v1` API with the token the user signs in with, so these
routes need no auth. The CSP allows only this origin: no inline script, no CDN, no frames.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from entity_memory.web import APP_CSS, APP_JS, INDEX_HTML

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


def _asset(body: str, media_type: str) -> Response:
    return Response(body, media_type=media_type, headers=_HEADERS)


@router.get("/")
async def inspector_page() -> Response:
    return _asset(INDEX_HTML, "text/html; charset=utf-8")


@router.get("/inspector.js")
async def inspector_script() -> Response:
    return _asset(APP_JS, "text/javascript; charset=utf-8")


@router.get("/inspector.css")
async def inspector_style() -> Response:
    return _asset(APP_CSS, "text/css; charset=utf-8")
