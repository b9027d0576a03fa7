"""Isolation between users: admin and per-user tokens over every route, and rate limits."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest

from entity_memory.http.app import create_app
from entity_memory.http.deps import CLOCK_HEADER
from entity_memory.service.auth import (
    Admission,
    Caller,
    Principal,
    has_valid_tag,
    hash_token,
    mint_token,
)
from entity_memory.service.bindings import Bindings
from entity_memory.service.rate_limits import (
    DEFAULT_REQUESTS_PER_MINUTE,
    REQUESTS_PER_MINUTE_VAR,
    Budgets,
    SlidingWindow,
)
from entity_memory.settings import Settings
from entity_memory.storage.d1 import CountingD1
from entity_memory.storage.kv import InMemoryKV

from .conftest import Clock

ADMIN = "admin-secret-token"
CAMPAIGN = {"type": "campaign", "name": "Campaign Alpha", "content": "on tCPA"}

#: Every user-scoped route, as (method, path under /v1/users/{user}, JSON body).
ROUTES: list[tuple[str, str, dict | None]] = [
    ("PUT", "/entities", {"session_id": "s1", "entities": [CAMPAIGN]}),
    ("GET", "/entities", None),
    ("GET", "/entities/campaign/campaign-alpha", None),
    ("GET", "/entities/campaign/campaign-alpha/history", None),
    ("POST", "/context", {"task": "alpha"}),
    ("POST", "/sessions/s9/extract", {"transcript": "user: pause Campaign Alpha"}),
    ("GET", "/changes", None),
    ("GET", "/trends", None),
    ("GET", "/export", None),
    ("POST", "/reindex", None),
    ("DELETE", "/entities/campaign/campaign-alpha", None),
    ("DELETE", "", None),
]


class Limiter:
    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.used: Counter[str] = Counter()

    async def __call__(self, key: str) -> bool:
        self.used[key] += 1
        return self.used[key] <= self.budget


#: The per-token budget of the `budgeted` app: small, so a test reaches it in a few requests.
BUDGET = 5
MINUTE = 60_000


@pytest.fixture
async def api(memkv: InMemoryKV, db: CountingD1, clock: Clock) -> AsyncIterator[httpx.AsyncClient]:
    async with _client(memkv, db, clock, {}) as client:
        yield client


@pytest.fixture
async def budgeted(
    memkv: InMemoryKV, db: CountingD1, clock: Clock
) -> AsyncIterator[httpx.AsyncClient]:
    """The app with a per-token budget of BUDGET a minute, counted on the test's clock."""
    async with _client(memkv, db, clock, {REQUESTS_PER_MINUTE_VAR: str(BUDGET)}) as client:
        yield client


@asynccontextmanager
async def _client(
    memkv: InMemoryKV,
    db: CountingD1,
    clock: Clock,
    extra_vars: dict[str, str],
    *,
    allow_clock_override: bool = False,
) -> AsyncIterator[httpx.AsyncClient]:
    limiter = Limiter(budget=1000)
    bindings = Bindings(
        kv=memkv,
        db=db,
        clock=clock,
        settings=Settings(api_token=ADMIN, allow_clock_override=allow_clock_override),
        rate_limit=limiter,
        vars={"EXTRACTOR": "rules", **extra_vars},
    )
    app = create_app(lambda env: bindings)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        client.limiter = limiter  # type: ignore[attr-defined]
        yield client


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def mint(api: httpx.AsyncClient, user: str) -> dict:
    r = await api.post(
        "/v1/admin/tokens", json={"user_id": user, "label": "agent"}, headers=auth(ADMIN)
    )
    assert r.status_code == 201, r.text
    return r.json()


async def test_tokens_are_stored_hashed(api: httpx.AsyncClient, db: CountingD1) -> None:
    minted = await mint(api, "ann")
    assert minted["token"].startswith("emu_") and minted["userId"] == "ann"
    rows = await db.inner.all("SELECT * FROM api_tokens")
    assert rows[0]["token_hash"] == hash_token(minted["token"])
    assert minted["token"] not in str(rows)
    listed = (await api.get("/v1/admin/tokens", headers=auth(ADMIN))).json()["tokens"]
    assert [t["tokenId"] for t in listed] == [minted["tokenId"]]
    assert "token" not in listed[0]


@pytest.mark.parametrize(("method", "suffix", "body"), ROUTES)
async def test_a_user_token_reaches_only_its_own_user(
    api: httpx.AsyncClient, method: str, suffix: str, body: dict | None
) -> None:
    ann = (await mint(api, "ann"))["token"]
    await api.put(
        "/v1/users/bob/entities",
        json={"session_id": "s1", "entities": [CAMPAIGN]},
        headers=auth(ADMIN),
    )
    other = await api.request(method, f"/v1/users/bob{suffix}", json=body, headers=auth(ann))
    assert other.status_code == 403 and other.json()["error"]["code"] == "forbidden"
    # Prefix tricks do not widen the scope.
    for user in ("ann2", "an", "ann:bob", "ann%2Fbob"):
        r = await api.request(method, f"/v1/users/{user}{suffix}", json=body, headers=auth(ann))
        assert r.status_code == 403, (user, r.text)
    own = await api.request(method, f"/v1/users/ann{suffix}", json=body, headers=auth(ann))
    assert own.status_code not in (401, 403), own.text
    # Bob's data is intact.
    assert (await api.get("/v1/users/bob/entities", headers=auth(ADMIN))).json()["count"] == 1


async def test_user_tokens_cannot_use_admin_routes(api: httpx.AsyncClient) -> None:
    ann = (await mint(api, "ann"))["token"]
    for method, path in (
        ("POST", "/v1/admin/tokens"),
        ("GET", "/v1/admin/tokens"),
        ("DELETE", "/v1/admin/tokens/abc"),
    ):
        r = await api.request(method, path, json={"user_id": "ann"}, headers=auth(ann))
        assert r.status_code == 403, r.text


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "Bearer",
        "Bearer ",
        "Basic " + ADMIN,
        ADMIN,
        "Bearer wrong",
        "Bearer emu_000000000000_forged",
        "bearer  " + "x" * 5000,
    ],
)
async def test_missing_malformed_and_wrong_tokens_are_401(
    api: httpx.AsyncClient, header: str | None
) -> None:
    headers = {} if header is None else {"Authorization": header}
    r = await api.get("/v1/users/ann/entities", headers=headers)
    assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"


async def test_revoked_tokens_stop_working_at_once(api: httpx.AsyncClient) -> None:
    minted = await mint(api, "ann")
    assert (
        await api.get("/v1/users/ann/entities", headers=auth(minted["token"]))
    ).status_code == 200
    r = await api.delete(f"/v1/admin/tokens/{minted['tokenId']}", headers=auth(ADMIN))
    assert r.json() == {"revoked": minted["tokenId"]}
    r = await api.get("/v1/users/ann/entities", headers=auth(minted["token"]))
    assert r.status_code == 401
    again = await api.delete(f"/v1/admin/tokens/{minted['tokenId']}", headers=auth(ADMIN))
    assert again.status_code == 404


@pytest.mark.parametrize("user", ["a:b", "...", "%3A", "\u0430lice", "x" * 129, "a%00b", "a%20b"])
async def test_escaping_ids_are_refused_even_for_admin(api: httpx.AsyncClient, user: str) -> None:
    r = await api.get(f"/v1/users/{user}/entities", headers=auth(ADMIN))
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_id"
    r = await api.post("/v1/admin/tokens", json={"user_id": user}, headers=auth(ADMIN))
    assert r.status_code == 400


async def test_dot_ids_are_refused(api: httpx.AsyncClient) -> None:
    # HTTP clients resolve ".." path segments before sending; in a body it arrives as is.
    for user in ("..", "."):
        r = await api.post("/v1/admin/tokens", json={"user_id": user}, headers=auth(ADMIN))
        assert (r.status_code, r.json()["error"]["code"]) == (400, "invalid_id")


async def test_empty_user_segment_is_not_a_route(api: httpx.AsyncClient) -> None:
    r = await api.get("/v1/users//entities", headers=auth(ADMIN))
    assert r.status_code in (400, 404)


async def test_rate_limit_per_token_answers_429_with_retry_after(
    api: httpx.AsyncClient,
) -> None:
    api.limiter.budget = 3  # type: ignore[attr-defined]
    ann = (await mint(api, "ann"))["token"]
    bob = (await mint(api, "bob"))["token"]
    codes = [
        (await api.get("/v1/users/ann/entities", headers=auth(ann))).status_code for _ in range(5)
    ]
    assert codes == [200, 200, 200, 429, 429]
    r = await api.get("/v1/users/ann/entities", headers=auth(ann))
    assert r.json()["error"]["code"] == "rate_limited" and r.headers["retry-after"] == "60"
    # Another token has its own budget.
    assert (await api.get("/v1/users/bob/entities", headers=auth(bob))).status_code == 200


async def test_forget_deletes_the_users_tokens_and_labels(
    api: httpx.AsyncClient, db: CountingD1
) -> None:
    ann, bob = await mint(api, "ann"), await mint(api, "bob")
    put = {"session_id": "s1", "entities": [CAMPAIGN]}
    assert (
        await api.put("/v1/users/ann/entities", json=put, headers=auth(ann["token"]))
    ).is_success
    forgot = await api.delete("/v1/users/ann", headers=auth(ann["token"]))
    assert forgot.status_code == 200 and forgot.json()["complete"] is True
    assert forgot.json()["tokensDeleted"] == 1
    rows = await db.inner.all("SELECT user_id, label FROM api_tokens")
    assert [r["user_id"] for r in rows] == ["bob"]
    again = await api.get("/v1/users/ann/entities", headers=auth(ann["token"]))
    assert again.status_code == 401
    assert (await api.get("/v1/users/bob/entities", headers=auth(bob["token"]))).is_success


async def test_failed_authentication_is_rate_limited_per_address(
    api: httpx.AsyncClient, db: CountingD1
) -> None:
    api.limiter.budget = 3  # type: ignore[attr-defined]
    flood = {**auth("em_madeup_000000000000"), "CF-Connecting-IP": "203.0.113.7"}
    codes = [(await api.get("/v1/users/ann/entities", headers=flood)).status_code for _ in range(6)]
    assert codes[:4] == [401] * 4 and codes[4:] == [429, 429]
    lookups = db.statements
    assert (await api.get("/v1/users/ann/entities", headers=flood)).status_code == 429
    assert db.statements == lookups  # refused before any token lookup
    elsewhere = {**flood, "CF-Connecting-IP": "198.51.100.1"}
    assert (await api.get("/v1/users/ann/entities", headers=elsewhere)).status_code == 401


# --- the budgets, on a clock the test controls ------------------------------------------------


def test_a_sliding_window_admits_at_most_its_limit_in_any_period() -> None:
    window = SlidingWindow(limit=3, period_ms=MINUTE)
    assert [window.hit("k", t * 1000) for t in (0, 10, 20)] == [True, True, True]
    assert not window.hit("k", 59_999) and window.retry_after_ms("k", 59_999) == 1
    assert window.hit("k", 60_000)  # the event at 0 s has left the window
    assert not window.hit("k", 61_000) and window.retry_after_ms("k", 61_000) == 9_000
    assert window.hit("other", 61_000)  # keys do not share a budget


def test_a_window_boundary_does_not_double_the_budget() -> None:
    """A fixed-window counter admits 2 x limit around its boundary; this does not."""
    window = SlidingWindow(limit=4, period_ms=MINUTE)
    times = [50_000, 55_000, 58_000, 59_000, 61_000, 65_000, 70_000, 100_000, 110_000]
    admitted = [t for t in times if window.hit("k", t)]
    assert admitted == [50_000, 55_000, 58_000, 59_000, 110_000]


def test_a_clock_moved_back_does_not_reset_the_key() -> None:
    """A time older than the key's newest counts as the newest: the window was emptied by
    one (a concurrent request whose lookup finished late), admitting every request after."""
    window = SlidingWindow(limit=1, period_ms=MINUTE)
    assert window.hit("k", 10 * MINUTE) and not window.hit("k", 10 * MINUTE + 1)
    assert not window.hit("k", MINUTE)
    assert window.retry_after_ms("k", MINUTE) == MINUTE
    assert window.hit("k", 11 * MINUTE)


@pytest.mark.parametrize("seed", range(5))
def test_times_out_of_order_never_admit_more_than_the_limit_in_a_minute(seed: int) -> None:
    """Requests reach the window with times up to 2 s out of order (concurrent lookups
    finishing in any order): on the window's clock (a late one counts at the newest time
    seen), no minute holds more than the limit, and the budget is still all usable."""
    rng = random.Random(seed)
    window = SlidingWindow(limit=600, period_ms=MINUTE)
    sent = sorted(rng.uniform(0, 3 * MINUTE) for _ in range(6_000))
    arrivals = sorted(sent, key=lambda t: t + rng.uniform(0, 2_000))
    admitted, newest = [], 0.0
    for t in arrivals:
        newest = max(newest, t)
        if window.hit("k", int(t)):
            admitted.append(int(newest))
    assert _most_in_a_minute(admitted) <= 600
    assert len(admitted) >= 2 * 600


def _most_in_a_minute(times: list[float]) -> int:
    """The most events any 60 s holds (times sorted)."""
    most, first = 0, 0
    for last, t in enumerate(times):
        while times[first] <= t - MINUTE:
            first += 1
        most = max(most, last - first + 1)
    return most


class JitteryTokens:
    """A token store whose lookups finish in any order (D1's latency varies)."""

    def __init__(self, rng: random.Random, clock: Clock) -> None:
        self.rng, self.clock = rng, clock

    async def lookup(self, token: str) -> Principal | None:
        for _ in range(self.rng.randint(0, 20)):
            await asyncio.sleep(0)
        return Principal("user", "ann", "t1")


@pytest.mark.parametrize("seed", range(3))
async def test_eight_concurrent_clients_get_at_most_the_budget_a_minute(
    seed: int, clock: Clock
) -> None:
    """The red team's 8 clients, in simulation: each request's lookup yields a random number
    of times, the clock advances as requests are sent. 851 of them got through in 60 s
    against 600 (the window was reset by every late arrival); none over the budget now."""
    rng = random.Random(seed)
    admission = Admission(Budgets())
    tokens = JitteryTokens(rng, clock)
    _, token = mint_token(ADMIN)
    caller = Caller(authorization=f"Bearer {token}", address="192.0.2.1", raw_path="/v1/users/ann")
    start = clock.now
    admitted: list[int] = []

    async def client() -> None:
        while clock.now - start < 2 * MINUTE:
            clock.advance(rng.randint(0, 30))
            outcome = await admission.admit(caller, ADMIN, tokens, None, clock)  # type: ignore[arg-type]
            if isinstance(outcome, Principal):
                admitted.append(clock.now)

    await asyncio.gather(*(client() for _ in range(8)))
    assert _most_in_a_minute(sorted(admitted)) <= DEFAULT_REQUESTS_PER_MINUTE
    assert len(admitted) >= DEFAULT_REQUESTS_PER_MINUTE  # the budget is usable


async def test_a_clock_header_never_moves_the_budget(
    memkv: InMemoryKV, db: CountingD1, clock: Clock
) -> None:
    """With ALLOW_CLOCK_OVERRIDE, a decreasing `X-Entity-Memory-Now` switched every limit
    off; the header moves the data's clock, the budget counts on the Worker's."""
    extra = {REQUESTS_PER_MINUTE_VAR: str(BUDGET)}
    async with _client(memkv, db, clock, extra, allow_clock_override=True) as api:
        ann = auth((await mint(api, "ann"))["token"])
        codes = []
        for i in range(BUDGET + 3):
            pinned = {**ann, CLOCK_HEADER: str(2_000_000_000_000 - i * MINUTE)}
            codes.append((await api.get("/v1/users/ann/entities", headers=pinned)).status_code)
        later = {**ann, CLOCK_HEADER: str(3_000_000_000_000)}
        codes.append((await api.get("/v1/users/ann/entities", headers=later)).status_code)
        assert codes == [200] * BUDGET + [429] * 4
        clock.advance(MINUTE)
        assert (await api.get("/v1/users/ann/entities", headers=later)).status_code == 200


def test_a_window_remembers_a_bounded_number_of_keys() -> None:
    window = SlidingWindow(limit=1, period_ms=MINUTE, max_keys=2)
    for key in ("a", "b", "c"):
        assert window.hit(key, 0)
    assert window.hit("a", 1)  # forgotten, least recently used first
    assert not window.hit("c", 1)


async def test_the_per_token_budget_is_a_sliding_minute(
    budgeted: httpx.AsyncClient, clock: Clock
) -> None:
    ann = auth((await mint(budgeted, "ann"))["token"])
    codes = [(await budgeted.get("/v1/users/ann/entities", headers=ann)).status_code]
    clock.advance(50_000)
    for _ in range(BUDGET):
        codes.append((await budgeted.get("/v1/users/ann/entities", headers=ann)).status_code)
    assert codes == [200] * BUDGET + [429]
    refused = await budgeted.get("/v1/users/ann/entities", headers=ann)
    assert refused.json()["error"]["code"] == "rate_limited"
    assert refused.headers["retry-after"] == "10"  # when the first request leaves the minute
    clock.advance(10_000)
    assert (await budgeted.get("/v1/users/ann/entities", headers=ann)).status_code == 200
    assert (await budgeted.get("/v1/users/ann/entities", headers=ann)).status_code == 429
    clock.advance(MINUTE)
    assert (await budgeted.get("/v1/users/ann/entities", headers=ann)).status_code == 200


async def test_a_refused_request_is_not_counted(budgeted: httpx.AsyncClient, clock: Clock) -> None:
    ann = auth((await mint(budgeted, "ann"))["token"])
    for _ in range(BUDGET):
        assert (await budgeted.get("/v1/users/ann/entities", headers=ann)).status_code == 200
    for _ in range(20):  # a client that keeps retrying does not push its own budget back
        assert (await budgeted.get("/v1/users/ann/entities", headers=ann)).status_code == 429
    clock.advance(MINUTE)
    assert (await budgeted.get("/v1/users/ann/entities", headers=ann)).status_code == 200


def test_user_tokens_carry_a_tag_of_this_deployment() -> None:
    _, token = mint_token(ADMIN)
    assert token.startswith("emu_") and has_valid_tag(token, ADMIN)
    assert not has_valid_tag(token, "another-admin-token")
    assert not has_valid_tag(token[:-1] + ("A" if token[-1] != "A" else "B"), ADMIN)
    assert not has_valid_tag(token.rpartition(".")[0], ADMIN)
    _, untagged = mint_token(None)  # the open mode has no key
    assert "." not in untagged


async def _legacy_token(db: CountingD1, user: str) -> str:
    """A valid token as minted before tags (still accepted, on the throttled path)."""
    token = f"emu_0123456789ab_{'x' * 43}"
    await db.inner.all(
        "INSERT INTO api_tokens (token_id, token_hash, user_id, label, created_at)"
        " VALUES (?, ?, ?, ?, ?)",
        ("0123456789ab", hash_token(token), user, None, 0),
    )
    return token


async def test_a_failed_auth_flood_never_locks_out_a_valid_token(
    api: httpx.AsyncClient, db: CountingD1, clock: Clock
) -> None:
    address = {"CF-Connecting-IP": "203.0.113.9"}
    ann = {**auth((await mint(api, "ann"))["token"]), **address}
    legacy = {**auth(await _legacy_token(db, "bob")), **address}
    assert (await api.get("/v1/users/bob/entities", headers=legacy)).status_code == 200
    forged = [f"emu_{i:012x}_{'y' * 43}" for i in range(200)]
    codes: Counter[int] = Counter()
    for token in forged:
        r = await api.get("/v1/users/ann/entities", headers={**auth(token), **address})
        codes[r.status_code] += 1
    assert codes == {401: 30, 429: 170}
    lookups = db.statements
    flood = {**auth(forged[0]), **address}
    refused = await api.get("/v1/users/ann/entities", headers=flood)
    assert refused.status_code == 429 and db.statements == lookups  # no D1 read for it
    assert 1 <= int(refused.headers["retry-after"]) <= 60
    # The admin token and a tagged user token from that address are answered on their merits.
    admin = {**auth(ADMIN), **address}
    assert (await api.get("/v1/users/ann/entities", headers=admin)).status_code == 200
    assert (await api.get("/v1/users/ann/entities", headers=ann)).status_code == 200
    assert (await api.get("/v1/users/bob/entities", headers=ann)).status_code == 403
    # A forged tag is a failure like any other, refused without a lookup.
    fake_tag = {**auth(forged[1] + ".AAAAAAAAAAAAAAAAAAAAAA"), **address}
    assert (await api.get("/v1/users/ann/entities", headers=fake_tag)).status_code == 429
    # An untagged (pre-tag) token from that address waits with the flood, as documented.
    assert (await api.get("/v1/users/bob/entities", headers=legacy)).status_code == 429
    elsewhere = {**flood, "CF-Connecting-IP": "198.51.100.1"}
    assert (await api.get("/v1/users/ann/entities", headers=elsewhere)).status_code == 401
    clock.advance(MINUTE)
    assert (await api.get("/v1/users/ann/entities", headers=flood)).status_code == 401
    assert (await api.get("/v1/users/bob/entities", headers=legacy)).status_code == 200


async def test_a_revoked_tagged_token_costs_one_lookup(
    api: httpx.AsyncClient, db: CountingD1
) -> None:
    minted = await mint(api, "ann")
    await api.delete(f"/v1/admin/tokens/{minted['tokenId']}", headers=auth(ADMIN))
    assert (
        await api.get("/v1/users/ann/entities", headers=auth(minted["token"]))
    ).status_code == 401
    lookups = db.statements
    for _ in range(5):
        r = await api.get("/v1/users/ann/entities", headers=auth(minted["token"]))
        assert r.status_code == 401
    assert db.statements == lookups
