"""The MCP server driven by the MCP SDK's own stdio client: list tools, `remember` a
conversation, `recall` it, and read the preference and pain-point resources."""

from __future__ import annotations

import json
import sys

import pytest
from entity_memory_client import __version__
from entity_memory_client.mcp_server import LISTED_FIELDS
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

pytestmark = pytest.mark.e2e

CONVERSATION = [
    {"role": "user", "content": "Campaign Kappa is a shopping campaign with a ROAS of 4.1x."},
    {"role": "assistant", "content": "Noted: Campaign Kappa, shopping, ROAS 4.1x."},
    {"role": "user", "content": "I prefer short bullet-point reports with the numbers first."},
    {"role": "assistant", "content": "Short bullets, numbers first."},
]


def _text(result: object) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)  # type: ignore[attr-defined]


async def test_remember_then_recall_over_stdio(env: dict[str, str], user: str) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "entity_memory_client.mcp_server", "--user", user],
        env=env,
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        started = await session.initialize()
        assert started.server_info.version == __version__  # the package's, never empty
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert set(tools) >= {"remember", "recall", "entities", "history", "forget_entity"}
        assert "messages" in tools["remember"].input_schema["properties"]

        remembered = await session.call_tool(
            "remember", {"messages": CONVERSATION, "session_id": "mcp-s1"}
        )
        assert not remembered.is_error, _text(remembered)
        stored = json.loads(_text(remembered))
        assert stored["session_id"] == "mcp-s1" and stored["stored"]

        # Storing nothing says why: the same session again, a conversation with no facts.
        again = json.loads(
            _text(
                await session.call_tool(
                    "remember", {"messages": CONVERSATION, "session_id": "mcp-s1"}
                )
            )
        )
        assert again["stored"] == [] and "already processed" in again["why_nothing_stored"]
        chat = [{"role": "user", "content": "hello there"}, {"role": "assistant", "content": "hi"}]
        empty = json.loads(
            _text(await session.call_tool("remember", {"messages": chat, "session_id": "mcp-hi"}))
        )
        assert empty["stored"] == [] and empty["why_nothing_stored"]

        recalled = await session.call_tool("recall", {"task": "How is Campaign Kappa doing?"})
        assert not recalled.is_error
        context = _text(recalled)
        assert context.startswith("<entity_memory>") and "Kappa" in context

        # explicit entities are upserted as they are
        upserted = await session.call_tool(
            "remember",
            {
                "entities": [
                    {
                        "type": "pain_point",
                        "name": "Disapproved ads",
                        "content": "Ads keep getting disapproved for trademark terms",
                        "importance": 0.7,
                        "metadata": {"severity": "high"},
                    }
                ]
            },
        )
        pain = json.loads(_text(upserted))["stored"][0]
        assert pain["type"] == "pain_point" and pain["version"] == 1

        listed = json.loads(_text(await session.call_tool("entities", {})))
        assert listed["count"] == len(listed["entities"]) >= 2
        # What an agent reads of each: no ranking internals (vectors, keywords, links).
        for entry in listed["entities"]:
            assert {"id", "type", "name", "importance"} <= set(entry) <= set(LISTED_FIELDS)
        assert "Disapproved ads" in {e["name"] for e in listed["entities"]}
        hist = json.loads(
            _text(await session.call_tool("history", {"type": "pain_point", "id": pain["id"]}))
        )
        assert hist["versions"][0]["version"] == 1

        resources = {str(r.uri) for r in (await session.list_resources()).resources}
        assert resources == {"entity-memory://preferences", "entity-memory://pain-points"}
        prefs = await session.read_resource("entity-memory://preferences")
        assert "numbers first" in prefs.contents[0].text.lower()  # type: ignore[union-attr]
        pains = await session.read_resource("entity-memory://pain-points")
        assert "Disapproved ads" in pains.contents[0].text  # type: ignore[union-attr]

        gone = json.loads(
            _text(
                await session.call_tool("forget_entity", {"type": "pain_point", "id": pain["id"]})
            )
        )
        assert gone["deleted"]["id"] == pain["id"]
        # API errors are tool errors, with the API's code (and details when it gives them)
        missing = await session.call_tool("history", {"type": "campaign", "id": "no-such"})
        assert missing.is_error
        text = _text(missing)
        assert json.loads(text[text.index("{") :])["error"]["code"] == "not_found"
        invalid = await session.call_tool(
            "remember", {"entities": [{"type": "metric", "name": "x", "importance": 7}]}
        )
        assert invalid.is_error
        text = _text(invalid)
        error = json.loads(text[text.index("{") :])["error"]
        assert error["status"] == 422 and error["details"]

        # one session per server process unless given: three calls, one session
        sessions = set()
        for value in (41, 39, 37):
            fact = {
                "type": "metric",
                "name": "Kappa CPA",
                "content": f"CPA {value}",
                "importance": 0.6,
                "metadata": {"kpi": "cpa", "value": value},
            }
            done = await session.call_tool("remember", {"entities": [fact]})
            sessions.add(json.loads(_text(done))["session_id"])
        assert len(sessions) == 1
