"""A decision is one by its action: sent anew under another name with a stored decision's
very action, it is that decision (service/extraction/resolve_candidates.py)."""

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
