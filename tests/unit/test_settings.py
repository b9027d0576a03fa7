"""The settings: one typed module at the bottom, one registry of variable names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from entity_memory.domain.kind import kind_of
from entity_memory.settings import VAR_NAMES, EnvVar, ExtractorSettings, Settings

DOCS = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def test_settings_ask_only_for_registered_names() -> None:
    asked: list[str] = []

    def lookup(name: str) -> Any:
        asked.append(name)
        return None

    Settings.from_env(lookup)
    ExtractorSettings.from_vars({name: None for name in VAR_NAMES})

    class Recording(dict[str, Any]):
        def get(self, key: str, default: Any = None) -> Any:
            asked.append(key)
            return default

    ExtractorSettings.from_vars(Recording())
    assert asked and set(asked) <= set(VAR_NAMES)
    assert all(type(name) is str for name in asked)  # plain names reach the host's env


def test_every_registered_name_is_documented() -> None:
    text = DOCS.read_text()
    for var in EnvVar:
        short = "_" + var.value.removeprefix("TTL_DAYS_")  # the table abbreviates the TTLs
        assert f"`{var.value}`" in text or f"`{short}`" in text, var.value


def test_settings_are_typed_and_frozen() -> None:
    settings = Settings.from_env({"TTL_DAYS_METRIC": "7", "API_TOKEN": "t"}.get)
    assert kind_of("metric").ttl_seconds(settings) == 7 * 24 * 60 * 60 and settings.api_token == "t"
    with pytest.raises(ValidationError):
        settings.api_token = "other"  # type: ignore[misc]
    with pytest.raises(ValueError, match="TTL_DAYS_METRIC"):
        Settings.from_env({"TTL_DAYS_METRIC": "0"}.get)
    with pytest.raises(ValueError, match="LLM_TIMEOUT_S"):
        ExtractorSettings.from_vars({"LLM_TIMEOUT_S": "-1"})
