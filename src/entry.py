"""The Worker: a thin adapter from Cloudflare's runtime to the entity-memory ASGI app, and
the Durable Object class that runs each user's writes (`UserWriter`, bound as USER_WRITER)."""

import asgi
from workers import DurableObject, WorkerEntrypoint

from adapters.durable_object import alarm_setter, open_table, storage_emptier
from adapters.workers import bind, refuse_declared_too_large
from entity_memory.http.app import create_app
from entity_memory.http.errors import refusal_for
from entity_memory.settings import wall_clock_ms

app = create_app(bind)


class Default(WorkerEntrypoint):
    async def fetch(self, request):
        refused = refuse_declared_too_large(request)
        if refused is not None:
            return refused
        return await asgi.fetch(app, request, self.env, self.ctx)

    async def scheduled(self, controller, env, ctx):
        # Imported here, not at start-up: the cron and the writer need the extraction pipeline,
        # which the Worker's start-up CPU (limited) does not pay for (bench/startup.py).
        from entity_memory.service.maintenance import scheduled_reindex
        from entity_memory.service.retry_pending import scheduled_retry_pending

        bindings = bind(self.env)
        reindexed = await scheduled_reindex(bindings)
        retried = await scheduled_retry_pending(bindings)
        return {"reindex": reindexed, "pendingSessions": retried}


class UserWriter(DurableObject):
    """One user's writer. The Worker calls its methods (Durable Object RPC), one per
    operation of `service.writes.OPERATIONS`; each takes the call's JSON and answers the
    reply's JSON. It has no `fetch`: the public API is served by the Worker alone."""

    def __init__(self, ctx, env):
        from entity_memory.service.user_writer import WriterState
        from entity_memory.service.writer_host import WriterHost

        super().__init__(ctx, env)
        set_alarm = alarm_setter(ctx)
        table = open_table(ctx)
        state = WriterState(
            table,
            wall_clock_ms,
            schedule_retry=set_alarm,
            empty_storage=storage_emptier(ctx, table),
        )

        async def wake():
            await set_alarm(wall_clock_ms())

        self.host = WriterHost(state, lambda: bind(self.env), refusal_for, wake=wake)

    async def alarm(self, *_):
        await self.host.alarm()

    async def upsert(self, call):
        return await self.host.serve("upsert", call)

    async def delete_entity(self, call):
        return await self.host.serve("delete_entity", call)

    async def extract(self, call):
        return await self.host.serve("extract", call)

    async def enqueue_extract(self, call):
        return await self.host.serve("enqueue_extract", call)

    async def job_status(self, call):
        return await self.host.serve("job_status", call)

    async def list_jobs(self, call):
        return await self.host.serve("list_jobs", call)

    async def reindex(self, call):
        return await self.host.serve("reindex", call)

    async def drop_expired(self, call):
        return await self.host.serve("drop_expired", call)

    async def forget(self, call):
        return await self.host.serve("forget", call)
