"""The inspector's files (`static/`): one HTML page, ES modules and a stylesheet, read from the
package with importlib.resources so editors, `node --check` and linters see them as code.

They ship with the Worker as Data modules (the `[[rules]]` in wrangler.toml) and load from
`src/` on the local host; `ASSETS` names every file the Worker serves, so a request can never
reach another file of the package.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

from pydantic import BaseModel


class Asset(BaseModel, frozen=True):
    """One servable file: where it is under `static/` and what it is."""

    path: str
    media_type: str


_JS = "text/javascript; charset=utf-8"

#: URL path -> file. The script modules import one another by relative URL (`./js/dom.js`).
ASSETS: dict[str, Asset] = {
    "/": Asset(path="index.html", media_type="text/html; charset=utf-8"),
    "/inspector.css": Asset(path="inspector.css", media_type="text/css; charset=utf-8"),
    "/inspector.js": Asset(path="inspector.js", media_type=_JS),
    **{
        f"/js/{name}.js": Asset(path=f"js/{name}.js", media_type=_JS)
        for name in (
            "api",
            "changes",
            "dom",
            "entities",
            "entity",
            "manage",
            "nav",
            "sessions",
            "tools",
        )
    },
}


@cache
def read_asset(path: str) -> str:
    """The text of `static/<path>`; read once per isolate (the files change only on deploy)."""
    root = resources.files("entity_memory.web") / "static"
    return (root / path).read_text("utf-8")
