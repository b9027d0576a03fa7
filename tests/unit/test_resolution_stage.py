"""What the resolution stage makes of a reply's items against what is stored
(service/extraction/resolve_candidates.py): a decision is one by its action, and a problem
raised again counts one occurrence a session whatever count the reply gives."""

from __future__ import annotations

import pytest

from entity_memory.service.bindings import Bindings
from entity_memory.service.extraction.pipeline import SessionExtraction
from entity_memory.settings import Settings
from entity_memory.storage.d1 import CountingD1
from entity_memory.storage.kv import CountingKV
from entity_memory.storage.ledger import Ledger
from entity_memory.storage.store import EntityStore

from .conftest import Clock
from .test_extraction_pipeline import Scripted, factory_for, msgs

DAY = 24 * 60 * 60 * 1000


@pytest.fixture
def parts(kv: CountingKV, clock: Clock, db: CountingD1):
    ledger = Ledger(db)
    store = EntityStore(kv, Settings(), clock, ledger)
    return store, ledger, Bindings(kv=kv, clock=clock, db=db, vars={})


async def test_a_decision_sent_anew_with_a_stored_decisions_action_is_that_decision(
    parts, clock
) -> None:
    """A model reporting a decision's outcome may name it otherwise; its action, the
    decision's key, says which one it is."""
    store, ledger, bindings = parts
    action = "Hold all bid changes until the board review on 2026-06-12"
    first = "Hold all bid changes until the board review on 2026-06-12, please."
    later = "The board review went fine, so the hold is lifted."
    decision = {
        "type": "decision",
        "name": "Bid change hold",
        "content": "No bid changes until the board review.",
        "metadata": {"action": action},
        "source": first,
    }
    renamed = {
        **decision,
        "name": "Hold until the board review",
        "content": "The hold is lifted after the board review went fine.",
        "metadata": {"action": action, "outcome": "Board review went fine; hold lifted"},
        "source": later,
    }
    other = {**renamed, "name": "Lift the pricing hold", "metadata": {"action": "Lift it"}}
    llm = Scripted("workers-ai", [[decision], [renamed, other]])
    run = SessionExtraction(
        store, ledger, Bindings(kv=bindings.kv, clock=clock, db=bindings.db, vars={}),
        factory_for(workers_ai=llm),
    )  # fmt: skip
    await run.run("u1", "s1", msgs(first), "workers-ai")
    clock.advance(DAY)
    await run.run("u1", "s2", msgs(later), "workers-ai")
    decisions = [e for e in await store.list("u1") if e.type == "decision"]
    assert sorted(e.name for e in decisions) == ["Bid change hold", "Lift the pricing hold"]
    held = await store.get("u1", "decision", "bid-change-hold")
    assert held is not None and held.metadata.outcome == "Board review went fine; hold lifted"  # type: ignore[attr-defined]
    assert "Hold until the board review" in held.aliases


async def test_a_problem_raised_again_counts_one_return_a_session(parts, clock) -> None:
    store, ledger, bindings = parts
    said = "The booking widget keeps timing out on phones."
    pain = {
        "type": "pain_point",
        "name": "Booking widget timeouts",
        "content": said,
        "metadata": {"severity": "high"},
        "source": said,
    }
    # A model that sees the problem known reports a running total: 2, then 3.
    replies = [[pain], *([{**pain, "metadata": {"frequency": n}}] for n in (2, 3))]
    run = SessionExtraction(
        store, ledger, bindings, factory_for(workers_ai=Scripted("workers-ai", replies))
    )
    for n in range(3):
        await run.run("u1", f"s{n + 1}", msgs(said), "workers-ai")
        clock.advance(DAY)
    stored = await store.get("u1", "pain_point", "booking-widget-timeouts")
    assert stored is not None and stored.metadata.frequency == 3  # type: ignore[attr-defined]
