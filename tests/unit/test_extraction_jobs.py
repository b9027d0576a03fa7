"""Extraction as a job in the user's writer: recorded and answered at once, run off the
request path in chunks, waited for on request, never run twice, stopped by an erasure."""

from __future__ import annotations

import asyncio
import sqlite3
from typing import Any

import httpx
import pytest

from entity_memory.domain.limits import MAX_QUEUED_JOB_BYTES, MAX_QUEUED_JOBS
from entity_memory.extraction.base import Message
from entity_memory.service.jobs import JOB_CHUNK_MESSAGES, Job, JobBook, JobQueueFull
from entity_memory.service.writes import Operation
from entity_memory.storage.kv import InMemoryKV
from entity_memory.storage.local_table import SQLiteTable

from .writer_twin import WriterTwin


def conversation(campaigns: int) -> dict[str, Any]:
    """One user message per campaign, each naming a distinct one with its budget."""
    messages = [
        {"role": "user", "content": f"The Harbor {i} campaign runs on a ${20 + i}/day budget."}
        for i in range(campaigns)
    ]
    return {"messages": messages, "extractor": "rules"}


def extract_url(user: str, session: str, query: str = "") -> str:
    return f"/v1/users/{user}/sessions/{session}/extract{query}"


async def settle(twin: WriterTwin) -> None:
    """Let the writers' alarms run their queued jobs to the end."""
    while twin.alarms:
        await asyncio.gather(*list(twin.alarms))


async def test_extract_answers_at_once_with_a_job_the_writer_then_runs(
    client: httpx.AsyncClient, twin: WriterTwin
) -> None:
    r = await client.post(extract_url("jo", "s1"), json=conversation(3))
    assert r.status_code == 202, r.text
    job = r.json()["job"]
    assert job["state"] == "queued" and job["sessionId"] == "s1" and job["messages"] == 3
    assert r.json()["statusUrl"] == r.headers["location"] == f"/v1/users/jo/jobs/{job['id']}"
    await settle(twin)
    done = (await client.get(r.json()["statusUrl"])).json()
    assert done["state"] == "done" and done["chunksDone"] == done["chunksTotal"] == 1
    names = {e["name"] for e in done["result"]["entities"]}
    assert {"Harbor 0", "Harbor 1", "Harbor 2"} <= names
    listed = (await client.get("/v1/users/jo/jobs")).json()["jobs"]
    assert [j["id"] for j in listed] == [job["id"]] and "result" not in listed[0]


async def test_a_long_session_runs_in_chunks_and_other_writes_take_turns(
    client: httpx.AsyncClient, twin: WriterTwin
) -> None:
    r = await client.post(extract_url("jo", "long"), json=conversation(2 * JOB_CHUNK_MESSAGES + 5))
    job_id = r.json()["job"]["id"]
    assert r.json()["job"]["chunksTotal"] == 3
    seen: list[tuple[str, int]] = []
    while not seen or seen[-1][0] in ("queued", "running"):
        status = (await client.get(f"/v1/users/jo/jobs/{job_id}")).json()
        seen.append((status["state"], status["chunksDone"]))
        put = {"session_id": "side", "entities": [{"type": "campaign", "name": "Side"}]}
        assert (await client.put("/v1/users/jo/entities", json=put)).status_code == 200
        await asyncio.sleep(0)
    states = [s for s, _ in seen]
    assert states[-1] == "done" and "running" in states
    assert [n for _, n in seen] == sorted(n for _, n in seen)  # progress only grows
    result = (await client.get(f"/v1/users/jo/jobs/{job_id}")).json()["result"]
    stored = {e["name"] for e in result["entities"]}
    assert {"Harbor 0", f"Harbor {2 * JOB_CHUNK_MESSAGES + 4}"} <= stored


async def test_wait_answers_the_result_inline(client: httpx.AsyncClient) -> None:
    r = await client.post(extract_url("jo", "s1", "?wait=true"), json=conversation(2))
    assert r.status_code == 200, r.text
    assert r.json()["processed"] is True and r.json()["job"]["state"] == "done"
    assert {"Harbor 0", "Harbor 1"} <= {e["name"] for e in r.json()["entities"]}
    prefer = await client.post(
        extract_url("jo", "s2"), json=conversation(1), headers={"Prefer": "wait=30"}
    )
    assert prefer.status_code == 200 and prefer.json()["job"]["state"] == "done"


async def test_a_resent_session_finds_its_job_and_is_not_run_twice(
    client: httpx.AsyncClient, twin: WriterTwin
) -> None:
    host = twin.host("jo")
    original, runs = host.execute, []

    async def counted(op: Operation[Any, Any], call: Any, *args: Any, **options: Any) -> Any:
        runs.append(op.name)
        return await original(op, call, *args, **options)

    host.execute = counted  # type: ignore[method-assign]
    first = await client.post(extract_url("jo", "s1", "?wait=true"), json=conversation(2))
    again = await client.post(extract_url("jo", "s1"), json=conversation(2))
    assert again.status_code == 200  # already done: its result, at once
    assert again.json()["job"]["id"] == first.json()["job"]["id"]
    assert again.json()["job"]["resent"] is True
    assert again.json()["processed"] is False  # nothing new, as a re-sent session says
    await settle(twin)
    assert runs.count("extract") == 1


async def test_bad_requests_are_refused_before_a_job_is_recorded(
    client: httpx.AsyncClient,
) -> None:
    cases = [
        (extract_url("jo", "s1", "?wait=soon"), conversation(1), 400, "invalid_wait"),
        (extract_url("jo", "s1"), {"messages": [], "extractor": "rules"}, 422, None),
        (extract_url("jo", "s1"), {**conversation(1), "extractor": "nope"}, 400, None),
    ]
    for url, body, status, code in cases:
        r = await client.post(url, json=body)
        assert r.status_code == status, r.text
        if code:
            assert r.json()["error"]["code"] == code
    assert (await client.get("/v1/users/jo/jobs")).json()["jobs"] == []
    missing = await client.get("/v1/users/jo/jobs/0123456789abcdef01234567")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "job_not_found"


async def test_a_job_a_crash_interrupted_resumes_without_counting_twice(
    client: httpx.AsyncClient, twin: WriterTwin, memkv: InMemoryKV
) -> None:
    host = twin.host("jo")
    original = host.execute
    served = 0

    async def dies_after_the_first_chunk(
        op: Operation[Any, Any], call: Any, *args: Any, **options: Any
    ) -> Any:
        nonlocal served
        if op.name == "extract":
            served += 1
            if served == 2:
                raise asyncio.CancelledError  # the instance dies mid-job
        return await original(op, call, *args, **options)

    host.execute = dies_after_the_first_chunk  # type: ignore[method-assign]
    r = await client.post(extract_url("jo", "s1"), json=conversation(JOB_CHUNK_MESSAGES + 3))
    job_id = r.json()["job"]["id"]
    with pytest.raises(asyncio.CancelledError):
        await settle(twin)
    twin.restart("jo")
    status = (await client.get(f"/v1/users/jo/jobs/{job_id}")).json()
    assert status["state"] == "running" and status["chunksDone"] == 1
    await settle(twin)  # the status call woke the new instance, which resumes
    status = (await client.get(f"/v1/users/jo/jobs/{job_id}")).json()
    assert status["state"] == "done" and status["chunksDone"] == 2
    for i in (0, JOB_CHUNK_MESSAGES + 2):
        stored = await memkv.get_json(f"entity:jo:campaign:harbor-{i}")
        assert stored is not None and stored["version"] == 1


async def test_erasing_the_user_stops_a_running_job(
    client: httpx.AsyncClient, twin: WriterTwin, memkv: InMemoryKV
) -> None:
    host = twin.host("jo")
    original = host.execute

    async def erase_after_the_first_chunk(
        op: Operation[Any, Any], call: Any, *args: Any, **options: Any
    ) -> Any:
        done = await original(op, call, *args, **options)
        if op.name == "extract":
            host.execute = original  # type: ignore[method-assign]
            assert (await client.delete("/v1/users/jo")).status_code == 200
        return done

    host.execute = erase_after_the_first_chunk  # type: ignore[method-assign]
    await client.post(extract_url("jo", "s1"), json=conversation(2 * JOB_CHUNK_MESSAGES))
    await settle(twin)
    assert (await memkv.list(prefix="entity:jo:")).keys == []
    assert (await client.get("/v1/users/jo/jobs")).json()["jobs"] == []


async def test_a_jobs_chunks_share_index_writes_and_done_means_kv_has_them_all(
    client: httpx.AsyncClient, twin: WriterTwin, memkv: InMemoryKV
) -> None:
    """No client waits on a chunk, so a chunk does not wait for KV's index (one write a
    second per key): the chunks' index changes coalesce, and the job waits for KV once,
    before it says `done`."""
    r = await client.post(extract_url("jo", "s1"), json=conversation(4 * JOB_CHUNK_MESSAGES))
    await settle(twin)
    done = (await client.get(r.json()["statusUrl"])).json()
    assert done["state"] == "done" and done["chunksDone"] == 4
    index = await memkv.get_json("index:jo:entities")
    assert index is not None and len(index["entries"]) == 4 * JOB_CHUNK_MESSAGES
    assert twin.writer("jo").index_writes < 4


async def test_a_user_cannot_queue_jobs_past_the_cap(
    client: httpx.AsyncClient, twin: WriterTwin
) -> None:
    """Jobs that wait (their writer's alarm not yet run) are capped per user: the next one
    is 429 `job_queue_full` with Retry-After, nothing recorded; a re-send of a queued
    session still finds its job; another user is not affected."""
    twin.host("jo")._wake = None  # the alarm never comes: every job stays queued
    for i in range(MAX_QUEUED_JOBS):
        r = await client.post(extract_url("jo", f"s{i}"), json=conversation(1))
        assert r.status_code == 202, r.text
    over = await client.post(extract_url("jo", "one-more"), json=conversation(1))
    assert over.status_code == 429, over.text
    error = over.json()["error"]
    assert error["code"] == "job_queue_full" and over.headers["retry-after"]
    assert error["details"]["queuedJobs"] == MAX_QUEUED_JOBS
    assert len((await client.get("/v1/users/jo/jobs")).json()["jobs"]) == MAX_QUEUED_JOBS
    again = await client.post(extract_url("jo", "s0"), json=conversation(1))
    assert again.status_code == 202 and again.json()["job"]["resent"] is True
    other = await client.post(extract_url("ann", "s0"), json=conversation(1))
    assert other.status_code in (200, 202), other.text


def test_the_queued_bytes_are_capped_too() -> None:
    table = SQLiteTable(sqlite3.connect(":memory:", isolation_level=None))
    book = JobBook(table)
    big = [Message(role="user", content="x" * 90_000) for _ in range(10)]
    queued = 0
    with pytest.raises(JobQueueFull) as refused:
        for i in range(MAX_QUEUED_JOBS):
            book.add(_job(f"j{i}", len(big)), big)
            queued += 1
    assert queued * 900_000 <= MAX_QUEUED_JOB_BYTES < (queued + 1) * 910_000
    assert refused.value.jobs == queued
    assert book.get(f"j{queued}") is None  # nothing of the refused job is kept


def _job(id_: str, messages: int) -> Job:
    return Job(
        id=id_,
        user_id="jo",
        session_id=id_,
        state="queued",
        created_at=0,
        updated_at=0,
        messages=messages,
        chunks_total=1,
    )
