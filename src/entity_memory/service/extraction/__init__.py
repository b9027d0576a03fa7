"""One session's conversation -> stored entities, as stages (graphiti-style), each a function
with typed input and output:

    plan      (plan.py)     what is new: the ledger's read cursor, re-sends, grown sessions,
                            messages still pending an LLM retry
    extract   (extract.py)  the extractor over each range of messages, with known entities
    check     (check.py)    schema validation, then grounding (extraction/grounding.py)
    resolve   (resolve_candidates.py)  onto what is stored: names, aliases, a decision's
                            action, semantic neighbours
    carry     (carry.py)    a campaign's newer reading onto its metric of that KPI, a
                            metric's newer value onto its campaign's latest figures
    ledger    (ledger.py)   the session's cursor and pending rows, as typed statements
    upsert    (upsert.py)   one batch upsert carrying the ledger rows

`pipeline.py` runs them in order; it is the only module that knows the order. The stages
reach the store through `ports.SessionStore` (what they need, nothing more).
"""
