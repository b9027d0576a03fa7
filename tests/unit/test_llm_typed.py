"""The typed-pass designs: one short request per kind, a compact bounded reply, a fixed system
message, cut-off replies kept without asking again. Protocol tests against the replay server:
they test our client and pipeline, not a model."""

from __future__ import annotations

import json
from typing import Any

from entity_memory.domain.kind import all_kinds
from entity_memory.extraction.base import Message
from entity_memory.extraction.llm.chat_models import workers_ai_spec
from entity_memory.extraction.llm.typed import (
    dedupe,
    offered_item,
    pass_budget,
    read_items,
)
from entity_memory.extraction.llm.typed_items import (
    KINDS,
    DecisionItem,
    MetricItem,
    item_schema,
    to_candidate,
)
from entity_memory.extraction.llm.typed_prompt import SYSTEM

from .llm_fixtures import NOW, openai, replay_server_fixture, server_fixture  # noqa: F401
from .llm_replay_server import ReplayServer, completion

MAX_ITEMS = {k.type: k.llm_max_items for k in all_kinds()}

TALK = [
    Message(role="user", content="Wheel Workshops bookings cost us $41 each, I want $30."),
    Message(role="assistant", content="Shall we move Wheel Workshops to target CPA at $30?"),
    Message(role="user", content="Yes, do it. Keep updates short."),
]
METRIC_ITEM = {
    "quote": "Wheel Workshops bookings cost us $41 each, I want $30.",
    "kpi": "cost per booking",
    "value": 41,
    "target": 30,
    "campaign": "Wheel Workshops",
}


def _reply(*items: dict[str, Any]) -> str:
    return json.dumps({"items": list(items)})


def test_read_items_keeps_complete_items_of_a_cut_off_reply() -> None:
    assert read_items(_reply(METRIC_ITEM)) == ([METRIC_ITEM], False)
    cut = _reply(METRIC_ITEM, METRIC_ITEM)[:-40]
    assert read_items(cut) == ([METRIC_ITEM], True)
    assert read_items('{"items": [{"quote": "Whe') == ([], True)
    assert read_items({"items": [METRIC_ITEM]}) == ([METRIC_ITEM], False)


def test_the_output_budget_follows_the_chunk_and_is_capped_per_kind() -> None:
    assert pass_budget("metric", 100) < pass_budget("metric", 400)
    assert pass_budget("metric", 100_000) == pass_budget("metric", 1_000_000)


def test_item_schemas_are_bounded_and_self_contained() -> None:
    for kind in KINDS:
        schema = item_schema(kind)
        text = json.dumps(schema)
        assert "$ref" not in text and "$defs" not in text
        items = schema["properties"]["items"]
        assert items["maxItems"] == MAX_ITEMS[kind]
        # String lengths are validated after parsing, not compiled into the server's grammar.
        assert "maxLength" not in text and "minLength" not in text
        assert next(iter(items["items"]["properties"])) == "quote"


def test_an_item_becomes_a_candidate_quoting_its_source() -> None:
    candidate = to_candidate("metric", MetricItem.model_validate(METRIC_ITEM))
    assert candidate["source"] == METRIC_ITEM["quote"]
    assert candidate["name"] == "Wheel Workshops cost per booking"
    assert candidate["metadata"] == {
        "kpi": "cost per booking",
        "value": 41,
        "target": 30,
        "unit": "USD",
        "campaign": "Wheel Workshops",
    }


def test_a_decision_names_its_campaign_and_the_problem_it_fixes_as_affected() -> None:
    """Both become `affectedEntities`: the store links them to the campaign and to the pain
    point of those names (domain/links.py)."""
    item = {"quote": "Yes, do it.", "action": "Block the bot traffic", "problem": "fake fills"}
    with_campaign = {**item, "campaign": "Wheel Workshops"}
    meta = to_candidate("decision", DecisionItem.model_validate(with_campaign))["metadata"]
    assert meta["affectedEntities"] == ["Wheel Workshops", "fake fills"]
    meta = to_candidate("decision", DecisionItem.model_validate(item))["metadata"]
    assert meta["affectedEntities"] == ["fake fills"]


def test_a_looping_reply_is_deduplicated() -> None:
    candidate = to_candidate("metric", MetricItem.model_validate(METRIC_ITEM))
    assert dedupe([candidate, dict(candidate), {**candidate, "name": "other"}]) == [candidate]


def test_a_rules_candidate_is_offered_in_the_compact_shape() -> None:
    rules = {
        "type": "campaign",
        "name": "Wheel Workshops",
        "source": "Wheel Workshops runs at $25 a day",
        "metadata": {"budget": 25, "provenance": []},
    }
    assert offered_item(rules) == {
        "quote": "Wheel Workshops runs at $25 a day",
        "name": "Wheel Workshops",
        "budget": 25,
    }


async def test_one_request_per_kind_with_one_fixed_system_message(server: ReplayServer) -> None:
    server.queue(*(completion(_reply()) for _ in KINDS))
    server.queue(completion(_reply(METRIC_ITEM)))
    extractor = openai(server, design="typed")
    await extractor.extract(TALK, [], NOW)
    requests = [r.json for r in server.requests]
    assert len(requests) == len(KINDS)
    systems = {r["messages"][0]["content"] for r in requests}
    assert systems == {SYSTEM}
    users = [r["messages"][1]["content"] for r in requests]
    shared = users[0].rsplit("\n\n", 1)[0]
    assert all(u.startswith(shared) for u in users)  # only the last line differs
    assert [u.rsplit("List: ", 1)[1] for u in users] == list(KINDS)
    names = [r["response_format"]["json_schema"]["name"] for r in requests]
    assert names == [f"{k}_items" for k in KINDS]
    assert all(r["max_tokens"] <= MAX_ITEMS[k] * 60 for r, k in zip(requests, KINDS, strict=True))


async def test_a_cut_off_pass_keeps_its_items_and_is_not_asked_again(
    server: ReplayServer,
) -> None:
    replies = {k: completion(_reply()) for k in KINDS}
    cut = _reply(METRIC_ITEM, METRIC_ITEM)[:-40]
    replies["metric"] = completion(cut, finish_reason="length")
    server.queue(*(replies[k] for k in KINDS))
    result = await openai(server, design="typed").extract(TALK, [], NOW)
    assert len(server.requests) == len(KINDS)  # no retry, no split
    assert result.truncated == 1 and result.failures == []
    assert [c["source"] for c in result.candidates] == [METRIC_ITEM["quote"]]


async def test_confirm_offers_the_rules_candidates_at_the_end(server: ReplayServer) -> None:
    server.queue(*(completion(_reply()) for _ in KINDS))
    talk = [Message(role="user", content="Wheel Workshops campaign is on Manual CPC at $25/day")]
    await openai(server, design="confirm").extract(talk, [], NOW)
    campaign = server.requests[KINDS.index("campaign")].json["messages"][1]["content"]
    tail = campaign.rsplit("\n\n", 1)[1]
    assert "A parser found these campaign items" in tail and "Wheel Workshops" in tail


async def test_union_asks_only_the_passes_it_is_given_and_keeps_every_rules_kind(
    server: ReplayServer,
) -> None:
    server.queue(completion(_reply()))
    talk = [
        Message(
            role="user",
            content="Wheel Workshops campaign is on Manual CPC at $25/day. Keep updates short.",
        )
    ]
    result = await openai(server, design="union", passes=("campaign",)).extract(talk, [], NOW)
    asked = [r.json["messages"][1]["content"].rsplit("List: ", 1)[1] for r in server.requests]
    assert asked == ["campaign"]
    # The rules' candidates of the kinds the model is not asked for are still there.
    assert {c["type"] for c in result.candidates} >= {"campaign", "preference"}


def test_the_local_model_is_asked_for_the_kinds_its_design_names() -> None:
    spec = workers_ai_spec("local/qwen2.5-coder-1.5b-instruct")
    assert spec.passes is None or set(spec.passes) <= set(KINDS)
    assert workers_ai_spec("@cf/zai-org/glm-4.7-flash").passes is None
