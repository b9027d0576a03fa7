"""Erasure is final: a write authorised by the user's token before the erasure, that reaches
the user's writer after it, is refused (410 `user_erased`) and leaves nothing behind."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from typing import Any

import httpx
import pytest

from entity_memory.http.app import create_app
from entity_memory.service.bindings import Bindings
from entity_memory.settings import Settings
from entity_memory.storage.kv import CountingKV, InMemoryKV

from .conftest import Clock
from .writer_twin import WriterTwin

ADMIN = "admin-secret-token"
USER = "eve"


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def entities(*names: str) -> dict[str, Any]:
    return {"session_id": "s", "entities": [{"type": "campaign", "name": n} for n in names]}


@pytest.fixture
async def api(
    twin: WriterTwin, counted: CountingKV, clock: Clock, db: Any
) -> AsyncIterator[httpx.AsyncClient]:
    worker = Bindings(
        kv=counted,
        db=db,
        clock=clock,
        writers=twin.stub,
        settings=Settings(api_token=ADMIN),
        vars={"EXTRACTOR": "rules"},
    )
    app = create_app(lambda env: replace(worker))
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
        yield c


async def user_token(api: httpx.AsyncClient) -> str:
    minted = await api.post("/v1/admin/tokens", json={"user_id": USER}, headers=auth(ADMIN))
    assert minted.status_code == 201, minted.text
    token: str = minted.json()["token"]
    return token


async def until(condition: Callable[[], bool]) -> None:
    for _ in range(10_000):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("the condition never held")


async def queued_behind_a_forget(
    api: httpx.AsyncClient, twin: WriterTwin, token: str, late: Callable[[], Awaitable[Any]]
) -> tuple[httpx.Response, Any]:
    """Run `late` (already authorised) so that it reaches the writer while a forget holds it."""
    lock = twin.writer(USER).lock
    await lock.acquire()
    forget = asyncio.ensure_future(api.delete(f"/v1/users/{USER}", headers=auth(token)))
    await until(lambda: (USER, "forget") in twin.calls)
    calls = len(twin.calls)
    write = asyncio.ensure_future(late())
    await until(lambda: len(twin.calls) > calls)  # authorised, and waiting for the writer
    lock.release()
    return await forget, await write


async def test_a_write_authorised_before_an_erasure_is_refused_after_it(
    api: httpx.AsyncClient, twin: WriterTwin, memkv: InMemoryKV, db: Any
) -> None:
    token = await user_token(api)
    assert (
        await api.put(f"/v1/users/{USER}/entities", json=entities("Alpha"), headers=auth(token))
    ).status_code == 200

    forget, write = await queued_behind_a_forget(
        api,
        twin,
        token,
        lambda: api.put(f"/v1/users/{USER}/entities", json=entities("Late"), headers=auth(token)),
    )
    assert forget.status_code == 200 and forget.json()["complete"]
    assert write.status_code == 410 and write.json()["error"]["code"] == "user_erased"
    assert (await memkv.list(prefix=f"entity:{USER}:")).keys == []
    assert await memkv.get_json(f"index:{USER}:entities") is None
    rows = await db.inner.all("SELECT * FROM entity_versions WHERE user_id = ?", (USER,))
    assert rows == []
    # The erased token is gone: anything it sends now is unauthorised.
    again = await api.get(f"/v1/users/{USER}/entities", headers=auth(token))
    assert again.status_code == 401


async def test_an_extraction_queued_behind_an_erasure_is_refused(
    api: httpx.AsyncClient, twin: WriterTwin, memkv: InMemoryKV
) -> None:
    token = await user_token(api)
    url = f"/v1/users/{USER}/sessions/s1/extract"
    body = {"transcript": "user: pause Campaign Alpha, the CPA is $40"}
    _, job = await queued_behind_a_forget(
        api, twin, token, lambda: api.post(url, json=body, headers=auth(token))
    )
    # Queuing a job does not wait for the writer; the job's own chunk does, and is refused.
    assert job.status_code in (202, 410)
    await asyncio.gather(*twin.alarms)
    assert (await memkv.list(prefix=f"entity:{USER}:")).keys == []


async def test_after_an_erasure_a_new_token_for_the_same_id_writes_again(
    api: httpx.AsyncClient, memkv: InMemoryKV
) -> None:
    old = await user_token(api)
    assert (await api.delete(f"/v1/users/{USER}", headers=auth(old))).json()["complete"]
    new = await user_token(api)
    r = await api.put(f"/v1/users/{USER}/entities", json=entities("Beta"), headers=auth(new))
    assert r.status_code == 200 and r.json()["results"][0]["version"] == 1
    admin = await api.put(f"/v1/users/{USER}/entities", json=entities("Gamma"), headers=auth(ADMIN))
    assert admin.status_code == 200  # the admin token is not bound to the erased user
