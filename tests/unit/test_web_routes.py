"""The inspector's assets: served without a token, locked down by CSP, stored text as data."""

from __future__ import annotations

import re

from entity_memory.storage.kv import InMemoryKV
from entity_memory.web import APP_JS, INDEX_HTML

from .conftest import Clock
from .test_api import make_client


async def test_page_script_and_style_are_served_without_a_token(
    memkv: InMemoryKV, clock: Clock
) -> None:
    async with make_client(memkv, clock, token="admin-secret") as client:
        page = await client.get("/")
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        csp = page.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
        script = await client.get("/inspector.js")
        assert script.headers["content-type"].startswith("text/javascript")
        style = await client.get("/inspector.css")
        assert style.headers["content-type"].startswith("text/css")
        # The API behind it still needs the token.
        assert (await client.get("/v1/users/u1/entities")).status_code == 401


def test_the_page_loads_only_same_origin_assets() -> None:
    for url in re.findall(r'(?:src|href)="([^"]+)"', INDEX_HTML):
        assert url.startswith(("/", "#")), url
    assert "<script>" not in INDEX_HTML  # no inline script (the CSP would block it anyway)


def test_the_script_never_parses_strings_as_html() -> None:
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert sink not in APP_JS.split("\n", 1)[1], sink


async def test_the_openapi_schema_leaves_the_inspector_out(memkv: InMemoryKV, clock: Clock) -> None:
    async with make_client(memkv, clock) as client:
        paths = (await client.get("/openapi.json")).json()["paths"]
        assert "/" not in paths and "/inspector.js" not in paths
