"""Every request-size limit and default in one place, so the API, its schema and the
pipeline cannot disagree (a cap stated in two places drifts: 413 in one, 422 in the other).

The Python client keeps its own copies: it is a separate package that must not import the
server.
"""

from __future__ import annotations

#: Largest request body, declared or streamed (chunked). Workers accept far more; memory is
#: the reason: one request must not crowd out other users in the isolate.
MAX_BODY_BYTES = 1024 * 1024
#: Entities in one upsert batch (bounded work and KV writes per request).
MAX_BATCH = 100
#: Messages in one extraction request; more is 413 `too_large`, like an oversized body.
MAX_MESSAGES = 2_000
#: Characters of one message's content.
MAX_MESSAGE_CHARS = 100_000
#: Characters of a context request's task.
MAX_TASK_CHARS = 20_000
#: Entities a context request returns by default and at most.
DEFAULT_CONTEXT_LIMIT = 20
MAX_CONTEXT_LIMIT = 100
#: The context block's token budget by default and at most.
DEFAULT_CONTEXT_TOKENS = 4_000
MAX_CONTEXT_TOKENS = 100_000
#: Ledger reads: versions of one entity, and changes since a time.
DEFAULT_HISTORY_LIMIT = 100
MAX_HISTORY_LIMIT = 1_000
DEFAULT_CHANGES_LIMIT = 500
MAX_CHANGES_LIMIT = 5_000
#: Extraction jobs a user may have waiting or running at once, and the bytes of the
#: conversations they hold (each job keeps its conversation in the writer's storage until it
#: ends): a client that queues faster than jobs run is told to wait, not stored without end.
MAX_QUEUED_JOBS = 10
MAX_QUEUED_JOB_BYTES = 8 * 1024 * 1024
#: Characters of a token's label.
MAX_TOKEN_LABEL_CHARS = 200
