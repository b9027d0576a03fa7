"""A PUT of entities to the local host that a loaded machine may have to retry.

Miniflare's emulated storage answers 503 with Retry-After now and then when the machine is
busy; a bench filling a user retries those (and only those) a few times.
"""

from __future__ import annotations

import time

import httpx

PUT_ATTEMPTS = 3


def put_entities(client: httpx.Client, user: str, session: str, docs: list[object]) -> None:
    """PUT `docs` for `user`; raises with the answer when it still fails."""
    for attempt in range(PUT_ATTEMPTS):
        r = client.put(f"/v1/users/{user}/entities", json={"session_id": session, "entities": docs})
        if r.status_code != 503 or attempt == PUT_ATTEMPTS - 1:
            break
        time.sleep(float(r.headers.get("retry-after", "1")))
    if r.is_error:
        raise RuntimeError(f"PUT failed: {r.status_code} {r.text[:500]}")
