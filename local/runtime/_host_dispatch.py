"""How the local host drives the Worker's entrypoint class, mirroring workerd.

workerd instantiates the exported `WorkerEntrypoint` subclass per event with `(ctx, env)` and
calls the handler through its `wrapper_func`: every JS argument goes through `python_from_rpc`
(so a JS `Request` arrives as `workers.Request`), the handler is called "relaxed" (only as many
positional arguments as it accepts), and the result goes back through `python_to_rpc` (so a
`workers.Response` or the `js.Response` that `asgi.fetch` returns leaves as a JS `Response`).
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from workers import WorkerEntrypoint, python_from_rpc, python_to_rpc


def _patch_anyio_to_thread() -> None:
    """Run anyio's thread offloading inline, as the SDK's own patch does inside workerd.

    The SDK applies it through workerd's `_cloudflare` import-patch manager, which the host
    does not have; without it a sync (`def`) FastAPI route fails with "can't start new thread".
    """
    import anyio.to_thread

    async def run_sync(func, *args, **_options):
        return func(*args)

    anyio.to_thread.run_sync = run_sync


def load_entrypoint(module_name: str, class_name: str = "Default") -> type:
    _patch_anyio_to_thread()
    module = importlib.import_module(module_name)
    cls = getattr(module, class_name, None)
    if not (inspect.isclass(cls) and issubclass(cls, WorkerEntrypoint)):
        raise TypeError(f"{module_name}.{class_name} must be a WorkerEntrypoint subclass")
    return cls


def has_handler(cls: type, name: str) -> bool:
    # The base class defines no handlers, so any callable found was written by the Worker.
    return callable(getattr(cls, name, None))


def _relaxed_args(method: Any, args: list[Any]) -> list[Any]:
    try:
        params = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return args
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return args
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return args[: len(positional)]


async def call_fetch(cls: type, ctx: Any, env: Any, request: Any) -> Any:
    worker = cls(ctx, env)
    args = _relaxed_args(worker.fetch, [python_from_rpc(request), worker.env, worker.ctx])
    result = worker.fetch(*args)
    if inspect.isawaitable(result):
        result = await result
    return python_to_rpc(result)


async def call_scheduled(cls: type, ctx: Any, env: Any, controller: Any) -> Any:
    """`scheduled(controller, env, ctx)`; env and ctx are the instance's (SDK-wrapped) ones."""
    worker = cls(ctx, env)
    # A JS ScheduledController is not a plain object, so python_from_rpc leaves it a JsProxy
    # with `.cron`, `.scheduledTime` and `.noRetry()`, as in workerd.
    args = _relaxed_args(worker.scheduled, [python_from_rpc(controller), worker.env, worker.ctx])
    result = worker.scheduled(*args)
    if inspect.isawaitable(result):
        result = await result
    return python_to_rpc(result)


def make_object(module_name: str, class_name: str, ctx: Any, env: Any) -> Any:
    """A Durable Object instance, constructed as workerd does: `cls(ctx, env)`."""
    cls = getattr(importlib.import_module(module_name), class_name)
    return cls(ctx, env)


def object_methods(module_name: str, class_name: str) -> list[str]:
    """The RPC methods of a Durable Object class, as workerd exposes them on a stub: its
    public methods (not starting with `_`), the handlers `fetch` and `alarm` left out (the
    stub's `fetch` is the host's own, and `alarm` is called by the runtime, not by callers)."""
    cls = getattr(importlib.import_module(module_name), class_name)
    return [
        name
        for name, member in inspect.getmembers(cls, callable)
        if not name.startswith("_") and name not in ("fetch", "alarm")
    ]


async def call_object_method(instance: Any, name: str, args: Any) -> Any:
    """An RPC call on a Durable Object instance, as workerd makes it: each JS argument through
    `python_from_rpc`, the method awaited, its result back through `python_to_rpc` (so a str
    crosses as a JS string, a dict as a plain object)."""
    method = getattr(instance, name)
    result = method(*[python_from_rpc(arg) for arg in args])
    if inspect.isawaitable(result):
        result = await result
    return python_to_rpc(result)


async def call_object_fetch(instance: Any, request: Any) -> Any:
    args = _relaxed_args(instance.fetch, [python_from_rpc(request)])
    result = instance.fetch(*args)
    if inspect.isawaitable(result):
        result = await result
    return python_to_rpc(result)


async def call_object_alarm(instance: Any) -> None:
    """`alarm()` of a Durable Object instance, when its class has one."""
    handler = getattr(instance, "alarm", None)
    if handler is None:
        return
    result = handler()
    if inspect.isawaitable(result):
        await result
