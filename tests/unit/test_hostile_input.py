"""Inputs that must not hurt: nesting that would exhaust the parser's stack, integers storage
cannot hold, and a stored record that no longer validates."""

from __future__ import annotations

import json
import subprocess
import sys
from itertools import accumulate

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from entity_memory.domain.keys import entity_key
from entity_memory.domain.safe_json import (
    MAX_JSON_DEPTH,
    MAX_SAFE_INTEGER,
    JsonTooDeep,
    check_depth,
    loads,
    nesting_exceeds,
)
from entity_memory.domain.task_dates import iso_day
from entity_memory.extraction.llm.parsing import OutputError, parse_output
from entity_memory.storage.kv import InMemoryKV

from .conftest import Clock
from .test_api import CAMPAIGN, assert_error, make_client, put

PAIN = {
    "type": "pain_point",
    "name": "Slow approvals",
    "content": "Ad approvals take days",
    "importance": 0.7,
    "metadata": {"severity": "high", "frequency": 1},
}


@pytest.mark.parametrize(
    "doc",
    [
        "[" * 6000,
        "[" * 6000 + "]" * 6000,
        '{"a":' * 5000 + "1" + "}" * 5000,
        "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1),
    ],
)
def test_too_deep_is_refused_before_parsing(doc: str) -> None:
    with pytest.raises(JsonTooDeep):
        check_depth(doc)


@pytest.mark.parametrize(
    "doc",
    [
        "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH,
        json.dumps({"text": "[" * 10_000}),  # brackets inside strings do not nest
        json.dumps([{"a": [1, 2, {"b": 'x"]]'}]}] * 5_000),
    ],
)
def test_legitimate_documents_pass(doc: str) -> None:
    assert loads(doc) == json.loads(doc)


def test_a_deeply_nested_llm_reply_is_an_output_error_not_a_crash() -> None:
    with pytest.raises(OutputError):
        parse_output('{"entities": ' + "[" * 6000 + "]" * 6000 + "}")


@pytest.mark.parametrize(
    ("path", "method"),
    [
        ("/v1/users/ann/entities", "PUT"),
        ("/v1/users/ann/context", "POST"),
        ("/v1/users/ann/sessions/s1/extract", "POST"),
    ],
)
async def test_deep_bodies_get_a_400_on_every_json_route(
    memkv: InMemoryKV, clock: Clock, path: str, method: str
) -> None:
    async with make_client(memkv, clock) as client:
        body = "[" * 6000 + "]" * 6000
        resp = await client.request(
            method, path, content=body, headers={"content-type": "application/json"}
        )
        assert_error(resp, 400, "json_too_deep")
        assert (await client.get("/healthz")).status_code == 200


#: Every way of saying "JSON" FastAPI parses as JSON, and types it does not (the check must not
#: depend on which): a body of any type is measured before anything reads it.
CONTENT_TYPES = (
    "application/JSON",
    "Application/Json; charset=utf-8",
    "application/vnd.campaign+json",
    "application/json",
    None,
    "text/plain",
    "application/x-www-form-urlencoded",
)


@pytest.mark.parametrize("content_type", CONTENT_TYPES)
@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/v1/users/ann/context"),
        ("POST", "/v1/users/ann/expired"),
        ("POST", "/v1/admin/tokens"),
        ("PATCH", "/v1/users/ann/entities"),
        ("GET", "/v1/users/ann/entities"),
    ],
)
async def test_deep_bodies_get_a_400_under_any_content_type_and_method(
    memkv: InMemoryKV, clock: Clock, method: str, path: str, content_type: str | None
) -> None:
    headers = {"content-type": content_type} if content_type else {}
    async with make_client(memkv, clock) as client:
        body = "[" * 6000 + "]" * 6000
        resp = await client.request(method, path, content=body, headers=headers)
        assert_error(resp, 400, "json_too_deep")
        assert (await client.get("/healthz")).status_code == 200


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16", "utf-32-be"])
def test_a_body_in_another_encoding_json_reads_is_measured_as_json_reads_it(
    encoding: str,
) -> None:
    """A UTF-16 code unit holding a `"` byte (U+2022) must not hide brackets from the check."""
    doc = '["\u2022", ' + "[" * 6000 + "]" * 6001
    with pytest.raises(JsonTooDeep):
        check_depth(doc.encode(encoding))
    shallow = json.dumps(["\u2022", [[1]]]).encode(encoding)
    assert loads(shallow) == ["\u2022", [[1]]]


def _quadratic_body(size: int) -> bytes:
    """The red team's body: an opening quote, escaped quotes, then brackets (a backtracking
    string pattern retried from every escaped quote: 11 s at 32 KB, hours at 1 MiB)."""
    return b'"' + b'\\"' * ((size - 66) // 2) + b"[" * 65


@pytest.mark.parametrize("size", [32 * 1024, 1024 * 1024])
def test_the_depth_check_is_linear_on_escaped_quotes(size: int) -> None:
    """Run in a child process so a regression hangs that process, not the suite: the bound is
    a hang guard minutes above the milliseconds this takes (bench.hostile_bodies times it)."""
    script = (
        "import sys; from entity_memory.domain.safe_json import nesting_exceeds;"
        "data = sys.stdin.buffer.read(); print(nesting_exceeds(data))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        input=_quadratic_body(size),
        capture_output=True,
        timeout=120,
        check=True,
    )
    assert done.stdout.strip() == b"False"  # an unterminated string: the parser refuses it


@pytest.mark.parametrize(
    "brackets",
    [
        "[" * 400 + "[]" * 100_000,  # deep, then wide
        "[" + "[]" * 100_000,  # one opening never closed, then wide and shallow
        ("[" * 64 + "]" * 64) * 2_000,  # at the limit, many times
    ],
)
def test_the_depth_check_is_exact_on_wide_documents(brackets: str) -> None:
    deepest = max(accumulate(1 if c == "[" else -1 for c in brackets))
    assert nesting_exceeds(brackets) == (deepest > MAX_JSON_DEPTH)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet='[]{}"\\a', max_size=300), st.integers(0, 300), st.integers(50, 80))
def test_the_depth_check_never_passes_what_the_parser_would_nest_too_deep(
    noise: str, at: int, run: int
) -> None:
    """Against a reference reader of JSON's grammar (strings, escapes; it stops where a parser
    stops with an error): whatever it nests too deep, the check refuses."""
    doc = noise[:at] + "[" * run + noise[at:]
    if _reference_depth(doc) > MAX_JSON_DEPTH:
        assert nesting_exceeds(doc)


def _reference_depth(doc: str) -> int:
    depth = deepest = i = 0
    in_string = False
    while i < len(doc):
        c = doc[i]
        if in_string:
            if c == "\\":
                i += 1
            in_string = c != '"'
        elif c == '"':
            in_string = True
        elif c == "\\":
            break  # outside a string: where the parser stops
        elif c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]}":
            depth -= 1
            if depth < 0:
                break
        i += 1
    return deepest


async def test_chunked_bodies_over_the_cap_are_refused(memkv: InMemoryKV, clock: Clock) -> None:
    from entity_memory.domain.limits import MAX_BODY_BYTES

    async def chunks():
        for _ in range(MAX_BODY_BYTES // 65536 + 2):
            yield b" " * 65536

    async with make_client(memkv, clock) as client:
        resp = await client.post(
            "/v1/users/ann/context", content=chunks(), headers={"content-type": "application/json"}
        )
        assert_error(resp, 413, "too_large")


METRIC = {"type": "metric", "name": "Alpha CPA", "metadata": {"kpi": "CPA", "value": 30}}
#: Times a client may not state: no calendar date (past year 9999), not an integer, or
#: seconds (read as milliseconds, a day in January 1970).
BAD_TIMES = (MAX_SAFE_INTEGER, 253_402_300_800_000, True, "1772539200000", 1_772_539_200, 0)
#: Days that do not exist, or not in ASCII digits, or before the floor every stated time has
#: (a provenance or history `at` must be from 2000 on; so must the day a value was measured).
BAD_DAYS = (
    "2026-02-31",
    "2026-13-45",
    "\uff12\uff10\uff12\uff16-03-03",
    "0001-01-01",
    "1999-12-31",
)


@pytest.mark.parametrize(
    ("entity", "field"),
    [
        ({**PAIN, "metadata": {**PAIN["metadata"], "frequency": 2**64}}, "frequency"),
        (
            {
                **METRIC,
                "metadata": {
                    **METRIC["metadata"],
                    "history": [{"value": 30, "at": MAX_SAFE_INTEGER + 1, "sessionId": "s"}],
                },
            },
            "at",
        ),
        *(({**PAIN, "provenance": [{"excerpt": "e", "at": at}]}, "at") for at in BAD_TIMES),
        *(
            (
                {
                    **METRIC,
                    "metadata": {**METRIC["metadata"], "history": [{"value": 30, "at": at}]},
                },
                "at",
            )
            for at in BAD_TIMES
        ),
        *(
            ({**METRIC, "metadata": {**METRIC["metadata"], "observedOn": day}}, "metric")
            for day in BAD_DAYS
        ),
    ],
)
async def test_numbers_and_times_storage_cannot_hold_are_422(
    memkv: InMemoryKV, clock: Clock, entity: dict, field: str
) -> None:
    """Refused before anything is written (a provenance time past year 9999 once failed a
    write half way, after the entity was stored)."""
    async with make_client(memkv, clock) as client:
        resp = await put(client, "ann", entity)
        error = assert_error(resp, 422, "invalid_entity")
        assert any(field in map(str, d["loc"]) for d in error["details"]), error
        assert (await client.get("/v1/users/ann/entities")).json()["count"] == 0
        assert (await client.post("/v1/users/ann/reindex")).status_code == 200


async def test_a_value_measured_after_today_is_422(memkv: InMemoryKV, clock: Clock) -> None:
    """It would stay the latest measured against every real value told after it."""
    future = iso_day(clock.now + 3 * 86_400_000)
    history = [{"value": 30, "at": clock.now, "observedOn": future}]
    async with make_client(memkv, clock) as client:
        for meta in ({"observedOn": future}, {"history": history}):
            metric = {**METRIC, "metadata": {**METRIC["metadata"], **meta}}
            error = assert_error(await put(client, "ann", PAIN, metric), 422, "invalid_entity")
            assert error["details"] == {"index": 1, "field": "observedOn"}
        assert (await client.get("/v1/users/ann/entities")).json()["count"] == 0
        tomorrow = {"observedOn": iso_day(clock.now + 86_400_000)}  # the teller's time zone
        ok = await put(client, "ann", {**METRIC, "metadata": {**METRIC["metadata"], **tomorrow}})
        assert ok.status_code == 200, ok.text


async def test_a_poisoned_record_does_not_take_the_user_down(
    memkv: InMemoryKV, clock: Clock
) -> None:
    async with make_client(memkv, clock) as client:
        assert (await put(client, "ann", CAMPAIGN, PAIN)).status_code == 200
        key = entity_key("ann", "pain_point", "slow-approvals")
        poisoned = await memkv.get_json(key)
        poisoned["metadata"]["frequency"] = 2**64
        await memkv.put(key, json.dumps(poisoned))

        context = await client.post("/v1/users/ann/context", json={"task": "approvals alpha"})
        assert context.status_code == 200
        assert "Campaign Alpha" in context.json()["context"]
        assert_error(
            await client.get("/v1/users/ann/entities/pain_point/slow-approvals"),
            409,
            "corrupt_record",
        )
        # A re-PUT repairs it; so does a DELETE.
        assert (await put(client, "ann", PAIN)).status_code == 200
        fixed = await client.get("/v1/users/ann/entities/pain_point/slow-approvals")
        assert fixed.status_code == 200
        await memkv.put(key, json.dumps(poisoned))
        deleted = await client.delete("/v1/users/ann/entities/pain_point/slow-approvals")
        assert deleted.status_code == 200
