"""The Worker: a thin adapter from Cloudflare's runtime to the entity-memory ASGI app, and
the Durable Object class that runs each user's writes (`UserWriter`, bound as USER_WRITER)."""

import asgi
from workers import DurableObject, WorkerEntrypoint

from adapters.durable_object import alarm_setter, open_table
from adapters.workers import bind
from entity_memory.http.app import create_app
from entity_memory.service.maintenance import scheduled_reindex
from entity_memory.service.retry_pending import scheduled_retry_pending
from entity_memory.service.settings import wall_clock_ms
from entity_memory.service.user_writer import INDEX_WRITES_HEADER
from entity_memory.service.user_writer import UserWriter as WriterState

app = create_app(bind)


class Default(WorkerEntrypoint):
    async def fetch(self, request):
        return await asgi.fetch(app, request, self.env, self.ctx)

    async def scheduled(self, controller, env, ctx):
        bindings = bind(self.env)
        reindexed = await scheduled_reindex(bindings)
        retried = await scheduled_retry_pending(bindings)
        return {"reindex": reindexed, "pendingSessions": retried}


class UserWriter(DurableObject):
    """One user's writer: the Worker forwards that user's writes here, one instance per id."""

    def __init__(self, ctx, env):
        super().__init__(ctx, env)
        self.writer = WriterState(open_table(ctx), wall_clock_ms, schedule_retry=alarm_setter(ctx))
        self.app = create_app(bind, writer=self.writer)

    async def alarm(self, *_):
        await self.writer.retry_flush()

    async def fetch(self, request):
        response = await self.writer.run(
            lambda: asgi.fetch(self.app, request, self.env, self.ctx),
            failed=lambda r: r.status >= 400,
        )
        # How many times this writer has written the index key to KV (coalescing, measured).
        response.headers.set(INDEX_WRITES_HEADER, str(self.writer.index_writes))
        return response
