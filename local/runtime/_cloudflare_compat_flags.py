"""The local host's stand-in for workerd's `_cloudflare_compat_flags` runtime module.

Each flag the SDK reads is a module attribute; host.mjs computes them from wrangler.toml's
compatibility_date and compatibility_flags (see local/runtime.mjs) and exposes them through
the `_entity_memory_host` JS module. Unknown flags read as False, like `get_compat_flag`.
"""

import _entity_memory_host as _host

_FLAGS = _host.compatFlags.to_py()
globals().update(_FLAGS)


def __getattr__(name: str) -> bool:
    if name.startswith("__"):
        raise AttributeError(name)
    return False
