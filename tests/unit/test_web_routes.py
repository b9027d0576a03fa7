"""The inspector's assets: real files in the package, served without a token, locked down by
CSP, valid JavaScript, stored text as data."""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from entity_memory.storage.kv import InMemoryKV
from entity_memory.web import ASSETS, read_asset

from .conftest import Clock
from .test_api import make_client

STATIC = Path(__file__).parents[2] / "src" / "entity_memory" / "web" / "static"
REPO = Path(__file__).parents[2]


def _scripts() -> list[Path]:
    return sorted(p for p in STATIC.rglob("*.js"))


async def test_page_script_and_style_are_served_without_a_token(
    memkv: InMemoryKV, clock: Clock
) -> None:
    async with make_client(memkv, clock, token="admin-secret") as client:
        page = await client.get("/")
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        csp = page.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
        for url, asset in ASSETS.items():
            got = await client.get(url)
            assert got.status_code == 200, url
            assert got.headers["content-type"] == asset.media_type
            assert got.text == (STATIC / asset.path).read_text("utf-8")
        assert (await client.get("/js/../assets.py")).status_code == 404
        # The API behind it still needs the token.
        assert (await client.get("/v1/users/u1/entities")).status_code == 401


def test_every_static_file_is_served_and_every_served_file_exists() -> None:
    on_disk = {p.relative_to(STATIC).as_posix() for p in STATIC.rglob("*") if p.is_file()}
    assert on_disk == {a.path for a in ASSETS.values()}


def test_every_module_import_is_served() -> None:
    served = set(ASSETS)
    for url, asset in ASSETS.items():
        if not asset.path.endswith(".js"):
            continue
        base = url.rsplit("/", 1)[0] + "/"
        for target in re.findall(r'from "(\./[^"]+)"', read_asset(asset.path)):
            resolved = (Path(base) / target).as_posix().replace("/./", "/")
            assert resolved in served, (url, target)


def test_wrangler_ships_the_static_files_as_data_modules() -> None:
    config = tomllib.loads((REPO / "wrangler.toml").read_text())
    rules = [r for r in config.get("rules", []) if r["type"] == "Data"]
    globs = [g for r in rules for g in r["globs"]]
    assert "entity_memory/web/static/**" in globs


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
@pytest.mark.parametrize("script", _scripts(), ids=lambda p: p.relative_to(STATIC).as_posix())
def test_each_script_is_valid_javascript(script: Path) -> None:
    # `--input-type=module`: parsed as the ES module the browser loads.
    done = subprocess.run(
        ["node", "--check", "--input-type=module"],
        input=script.read_text("utf-8"),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.skipif(not (REPO / "node_modules/.bin/esbuild").exists(), reason="no esbuild")
def test_the_modules_link(tmp_path: Path) -> None:
    # Bundling resolves every import against the exports: a missing name fails here, not in
    # the browser.
    done = subprocess.run(
        [str(REPO / "node_modules/.bin/esbuild"), str(STATIC / "inspector.js"), "--bundle"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_the_page_loads_only_same_origin_assets() -> None:
    html = read_asset("index.html")
    urls = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert "/inspector.js" in urls and "/inspector.css" in urls
    for url in urls:
        assert url.startswith(("/", "#")), url
    assert "<script>" not in html  # no inline script (the CSP would block it anyway)


@pytest.mark.parametrize("script", _scripts(), ids=lambda p: p.relative_to(STATIC).as_posix())
def test_the_script_never_parses_strings_as_html(script: Path) -> None:
    code = "\n".join(
        line for line in script.read_text("utf-8").splitlines() if not line.startswith("//")
    )
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert sink not in code, sink


async def test_the_openapi_schema_leaves_the_inspector_out(memkv: InMemoryKV, clock: Clock) -> None:
    async with make_client(memkv, clock) as client:
        paths = (await client.get("/openapi.json")).json()["paths"]
        assert "/" not in paths and "/inspector.js" not in paths
