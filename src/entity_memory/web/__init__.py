"""The web inspector: one page, ES modules and a stylesheet (`static/`), served by the Worker."""

from entity_memory.web.assets import ASSETS, Asset, read_asset

__all__ = ["ASSETS", "Asset", "read_asset"]
