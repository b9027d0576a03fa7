"""/openapi.json describes what every operation returns, so clients can rely on it."""

from __future__ import annotations

from typing import Any

from entity_memory.http.app import create_app
from entity_memory.service.bindings import Bindings
from entity_memory.storage.kv import InMemoryKV


def _spec() -> dict[str, Any]:
    return create_app(lambda _env: Bindings(kv=InMemoryKV())).openapi()


def test_every_operation_has_a_response_schema_for_its_success_status() -> None:
    spec = _spec()
    missing = []
    for path, item in spec["paths"].items():
        for method, op in item.items():
            success = [code for code in op["responses"] if code.startswith("2")]
            schemas = [
                op["responses"][code].get("content", {}).get("application/json", {}).get("schema")
                for code in success
            ]
            # FastAPI's default for an undeclared response is the empty schema `{}`.
            if not success or not all(schemas):
                missing.append(f"{method.upper()} {path}")
    assert missing == []


def test_entity_responses_name_the_five_types() -> None:
    spec = _spec()
    op = spec["paths"]["/v1/users/{user_id}/entities/{entity_type}/{entity_id}"]["get"]
    schema = op["responses"]["200"]["content"]["application/json"]["schema"]
    refs = {one["$ref"].rsplit("/", 1)[-1] for one in schema["oneOf"]}
    assert refs == {
        "CampaignEntity",
        "MetricEntity",
        "DecisionEntity",
        "PainPointEntity",
        "PreferenceEntity",
    }
