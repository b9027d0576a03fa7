"""The Worker: a thin adapter from Cloudflare's runtime to the entity-memory ASGI app."""

import asgi
from workers import WorkerEntrypoint

from adapters.workers import bind
from entity_memory.http.app import create_app
from entity_memory.service.maintenance import scheduled_reindex
from entity_memory.service.retry_pending import scheduled_retry_pending

app = create_app(bind)


class Default(WorkerEntrypoint):
    async def fetch(self, request):
        return await asgi.fetch(app, request, self.env, self.ctx)

    async def scheduled(self, controller, env, ctx):
        bindings = bind(self.env)
        reindexed = await scheduled_reindex(bindings)
        retried = await scheduled_retry_pending(bindings)
        return {"reindex": reindexed, "pendingSessions": retried}
