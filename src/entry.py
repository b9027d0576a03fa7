"""The Worker: a thin adapter from Cloudflare's runtime to the entity-memory ASGI app."""

import asgi
from workers import WorkerEntrypoint

from entity_memory.api import create_app
from worker_bindings import bind

app = create_app(bind)


class Default(WorkerEntrypoint):
    async def fetch(self, request):
        return await asgi.fetch(app, request, self.env, self.ctx)
