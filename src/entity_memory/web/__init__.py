"""The web inspector: one page, one script, one stylesheet, served by the Worker itself.

Python constants rather than data files, so they ship in the Worker bundle (and load in
Pyodide from `src/`) with no build step, no CDN and no upload rules.
"""

from entity_memory.web.page import INDEX_HTML
from entity_memory.web.script import APP_JS
from entity_memory.web.style import APP_CSS

__all__ = ["APP_CSS", "APP_JS", "INDEX_HTML"]
