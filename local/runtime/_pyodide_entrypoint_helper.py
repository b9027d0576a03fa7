"""The local host's stand-in for workerd's `_pyodide_entrypoint_helper` runtime module.

`workers-runtime-sdk` imports this module at import time (workers/utils.py, entrypoints.py);
inside workerd it is provided by the runtime. Only the names the SDK uses (see
`_pyodide_entrypoint_helper.pyi` in the wheel) are defined here; the JS side of each lives in
local/runtime.mjs and is reached through the `_entity_memory_host` JS module that host.mjs
registers before anything imports the SDK.
"""

import _entity_memory_host as _host

# `import_from_javascript("cloudflare:workers")` returns this object without awaiting, so it
# must exist before the first request: it carries the process-wide `env` and `waitUntil`.
cloudflareWorkersModule = _host.cloudflareWorkers
cloudflareSocketsModule = _host.cloudflareSockets


def doAnImport(module_name):
    """Return a JS promise of the module, as workerd's dynamic import does."""
    return _host.doAnImport(module_name)


def patchWaitUntil(ctx):
    """Called by WorkerEntrypoint.__init__ on the ctx the host passed in."""
    _host.patchWaitUntil(ctx)


def patch_env_helper(kwds):
    """Generator behind `workers.patch_env`: patch `cloudflare:workers`'s env, then restore."""
    restore = _host.patchEnv(kwds)
    try:
        yield
    finally:
        restore()
