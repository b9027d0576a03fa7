"""The per-token budget under concurrency (issue 39, finding 4), on the local host.

    .venv/bin/python -m bench.rate_budget [--clients 8] [--seconds 60]

Two tokens of one deployment (API_TOKEN set, ALLOW_CLOCK_OVERRIDE=1, the default budget of
600 a minute), each driven by `--clients` concurrent clients for `--seconds`, at once:

- plain: requests as an agent sends them (8 clients got 851 admitted in 60 s: concurrent
  requests reached the window out of order, and each late one emptied it);
- decreasing clock: every request states an earlier `X-Entity-Memory-Now` than the last
  (that switched every limit off).

Reported per token: admitted (200) and refused (429) requests, and the most admitted in any
60 s, which must not pass the budget. `--budget N` runs the host with a smaller budget
(`RATE_LIMIT_PER_MINUTE`), for a machine too slow to serve 600 requests a minute.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import sys
import tempfile
import time
from pathlib import Path

import httpx
from tests.e2e.hostproc import start_host

from entity_memory.http.deps import CLOCK_HEADER
from entity_memory.service.rate_limits import (
    DEFAULT_REQUESTS_PER_MINUTE,
    PERIOD_MS,
    REQUESTS_PER_MINUTE_VAR,
)

ADMIN = "bench-rate-admin-token-0123456789"


def most_in_a_period(times: list[float]) -> int:
    """The most events any PERIOD_MS holds (times in seconds, sorted)."""
    most, first = 0, 0
    for last, t in enumerate(times):
        while times[first] <= t - PERIOD_MS / 1000:
            first += 1
        most = max(most, last - first + 1)
    return most


async def drive(
    base_url: str, token: str, user: str, clients: int, seconds: float, decreasing: bool
) -> tuple[list[float], int]:
    admitted: list[float] = []
    refused = 0
    stated = itertools.count()
    deadline = time.monotonic() + seconds
    headers = {"Authorization": f"Bearer {token}"}

    async def client() -> None:
        nonlocal refused
        async with httpx.AsyncClient(base_url=base_url, timeout=120, headers=headers) as c:
            while time.monotonic() < deadline:
                extra = {}
                if decreasing:
                    extra[CLOCK_HEADER] = str(2_000_000_000_000 - next(stated) * 1000)
                r = await c.get(f"/v1/users/{user}/entities", headers=extra)
                if r.status_code == 200:
                    admitted.append(time.monotonic())
                elif r.status_code == 429:
                    refused += 1
                else:
                    raise RuntimeError(f"{r.status_code}: {r.text}")

    await asyncio.gather(*(client() for _ in range(clients)))
    return sorted(admitted), refused


async def run(base_url: str, clients: int, seconds: float, budget: int) -> int:
    async with httpx.AsyncClient(base_url=base_url, timeout=120) as c:
        tokens = []
        for user in ("bench-rate-plain", "bench-rate-clock"):
            r = await c.post(
                "/v1/admin/tokens",
                json={"user_id": user},
                headers={"Authorization": f"Bearer {ADMIN}"},
            )
            r.raise_for_status()
            tokens.append((user, r.json()["token"]))
    results = await asyncio.gather(
        drive(base_url, tokens[0][1], tokens[0][0], clients, seconds, decreasing=False),
        drive(base_url, tokens[1][1], tokens[1][0], clients, seconds, decreasing=True),
    )
    over = 0
    for label, (admitted, refused) in zip(("plain", "decreasing clock"), results, strict=True):
        most = most_in_a_period(admitted)
        over += most > budget
        print(
            f"{label:17} {clients} clients, {seconds:.0f} s: {len(admitted)} admitted,"
            f" {refused} refused; most admitted in any 60 s: {most}"
            f" (budget {budget})",
            flush=True,
        )
    return 1 if over else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--budget", type=int, default=DEFAULT_REQUESTS_PER_MINUTE)
    args = parser.parse_args()
    extra = ["--var", f"API_TOKEN={ADMIN}", "--var", "ALLOW_CLOCK_OVERRIDE=1"]
    extra += ["--var", f"{REQUESTS_PER_MINUTE_VAR}={args.budget}"]
    with (
        tempfile.TemporaryDirectory(prefix="rate-") as tmp,
        start_host(Path(tmp) / "v3", extra) as h,
    ):
        print(f"host ready on {h.base_url} in {h.startup_ms} ms", flush=True)
        return asyncio.run(run(h.base_url, args.clients, args.seconds, args.budget))


if __name__ == "__main__":
    sys.exit(main())
