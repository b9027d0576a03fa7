"""Ids that would address another path are refused before any request: the client, the MCP
server's tools and the CLI share one rule (`entity_memory_client.ids`).

`delete(".", "..")` built `/entities/./..`, which httpx resolves to `DELETE /v1/users/<user>`:
the whole user erased, the agent's own token with it.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from entity_memory_client import cli
from entity_memory_client.client import AsyncEntityMemory, EntityMemory, InvalidId, InvalidType
from entity_memory_client.mcp_server import build_server
from mcp.server.mcpserver.exceptions import ToolError

#: (type, id) pairs that are dot segments, or would be once a URL parser decodes them.
BAD_REFS = [
    (".", ".."),
    ("campaign", ".."),
    ("campaign", "."),
    ("..", "campaign-alpha"),
    ("campaign", "%2e%2e"),
    ("campaign", "%252e%252e"),
    ("campaign", "a/../.."),
    ("campaign", ""),
]


class Recorder(httpx.BaseTransport, httpx.AsyncBaseTransport):
    """Records what would be sent; answers 200 so a request that gets through is visible."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(f"{request.method} {request.url.raw_path.decode()}")
        return httpx.Response(200, json={"complete": True})

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return self.handle_request(request)


@pytest.mark.parametrize(("entity_type", "entity_id"), BAD_REFS)
def test_the_client_refuses_dot_ids_before_sending(entity_type: str, entity_id: str) -> None:
    recorder = Recorder()
    with EntityMemory("http://memory.test", user="ann", transport=recorder, max_retries=0) as mem:
        for call in (mem.delete, mem.get, mem.history):
            with pytest.raises((InvalidId, InvalidType)):
                call(entity_type, entity_id)
    assert recorder.sent == []


async def test_the_async_client_refuses_them_too() -> None:
    recorder = Recorder()
    async with AsyncEntityMemory("http://memory.test", user="ann", transport=recorder) as mem:
        with pytest.raises(InvalidType):
            await mem.delete(".", "..")
        with pytest.raises(InvalidId):
            await mem.job("..")
        with pytest.raises(InvalidId):
            await mem.extract("..", transcript="user: hello")
    assert recorder.sent == []


@pytest.mark.parametrize("user", ["..", ".", "%2e%2e", "a/b"])
def test_a_dot_user_is_refused(user: str) -> None:
    recorder = Recorder()
    with EntityMemory("http://memory.test", user=user, transport=recorder) as mem:
        with pytest.raises(InvalidId):
            mem.forget_user()
        with pytest.raises(InvalidId):
            mem.list()
    assert recorder.sent == []


def test_good_ids_still_reach_the_service() -> None:
    recorder = Recorder()
    with EntityMemory("http://memory.test", user="ann", transport=recorder) as mem:
        mem.delete("campaign", "campaign.alpha-2")
    assert recorder.sent == ["DELETE /v1/users/ann/entities/campaign/campaign.alpha-2"]


@pytest.mark.parametrize(("entity_type", "entity_id"), BAD_REFS)
async def test_the_mcp_forget_entity_tool_refuses_them(entity_type: str, entity_id: str) -> None:
    """No service is listening at this URL: a request that got out would fail otherwise."""
    server = build_server(url="http://127.0.0.1:9", token=None, user="ann")
    with pytest.raises(ToolError) as raised:
        await server.call_tool("forget_entity", {"type": entity_type, "id": entity_id})
    error = json.loads(str(raised.value).partition(": ")[2])["error"]
    assert error["code"] in ("invalid_id", "invalid_type") and error["status"] is None


def test_the_cli_uses_the_same_rule(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("ENTITY_MEMORY_CONFIG", str(tmp_path / "none.json"))
    code = cli.main(["delete", "campaign", "..", "--user", "ann", "--url", "http://127.0.0.1:9"])
    assert code == 2 and "invalid entity id" in capsys.readouterr().err
