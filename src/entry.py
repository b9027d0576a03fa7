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
    """One user's writer. The Worker calls its one RPC method, `serve(name, call_json)`,
    with an operation of `service.writes.OPERATIONS` and the call's JSON; it answers the
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

    async def serve(self, operation, call):
        return await self.host.serve(operation, call)
