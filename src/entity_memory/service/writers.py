"""The user's writer as a route sees it (`Writer.run(op, call)`), and what crosses the
boundary to the user's Durable Object: a call's JSON in, a `Reply` out.

- `RemoteWriter` (production) calls the object's one RPC method, `serve(name, call_json)`
  (`service/writer_host.py` runs it), and turns the reply back into the operation's done
  model, or raises `WriterRefused` with the typed `Refusal` the object answered; an object
  that cannot be reached is `WriterUnavailable` (503 `writer_unavailable`).
- `InProcessWriter` (no writer binding: CPython tests, a deployment without Durable
  Objects) runs the operation in the request itself, with nothing serialising writes.

The operations themselves are declared in `service/writes.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel, Field, JsonValue

from entity_memory.service.writes import Call, Operation, WriteContext

C = TypeVar("C", bound=Call)
D = TypeVar("D", bound=BaseModel)


# --- what crosses the boundary ---------------------------------------------------------------


class Refusal(BaseModel):
    """An error the writer answered instead of a result (what the API answers with it)."""

    status: int
    code: str
    message: str
    details: JsonValue = None
    headers: dict[str, str] | None = None


class WriterCosts(BaseModel):
    """What one call cost inside the writer, for the response's cost headers."""

    kv_ops: dict[str, int] = Field(default_factory=dict)
    d1_calls: int = 0
    d1_statements: int = 0
    #: KV writes of the index key this writer has made (coalescing made visible).
    index_writes: int = 0


class Reply(BaseModel, Generic[D]):
    """The writer's answer to one call: `result` (the operation's done model) or `refusal`.
    Typed by the done model on both sides (`Reply[UpsertDone]`), so the result is
    serialised by the object and validated by the Worker once each."""

    result: D | None = None
    refusal: Refusal | None = None
    costs: WriterCosts | None = None


class WriterRefused(Exception):
    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal


class WriterUnavailable(Exception):
    """The user's writer could not be reached (or did not answer a reply)."""


def dump_call(call: Call) -> str:
    """A call's JSON: only the fields set, so the entities' explicit fields stay explicit
    (a merge tells a field sent from one left out)."""
    return call.model_dump_json(by_alias=True, exclude_unset=True)


# --- the writers -----------------------------------------------------------------------------


class Writer(Protocol):
    """The user's writer, as a route sees it: runs one declared operation on its call."""

    costs: WriterCosts | None

    async def run(self, op: Operation[C, D], call: C) -> D: ...


class InProcessWriter:
    """Runs each call in the request itself (no writer binding)."""

    costs: WriterCosts | None = None

    def __init__(self, ctx: WriteContext) -> None:
        self.ctx = ctx

    async def run(self, op: Operation[C, D], call: C) -> D:
        return await op.run(self.ctx, call)


class WriterStub(Protocol):
    """A Durable Object stub as Python sees it: `await stub.serve(name, call_json)` returns
    the reply's JSON (a Python Workers RPC call; strings cross unchanged)."""

    async def serve(self, name: str, call_json: str) -> str: ...


#: The user's writer's stub, by user id (`env.USER_WRITER.getByName(user_id)`).
WriterStubs = Callable[[str], Any]


class RemoteWriter:
    """Calls the user's Durable Object through its one RPC method, `serve`."""

    costs: WriterCosts | None = None

    def __init__(self, stub: Any, now: int | None = None, token_id: str | None = None) -> None:
        self.stub, self.now, self.token_id = stub, now, token_id

    async def run(self, op: Operation[C, D], call: C) -> D:
        name = op.name
        if self.now is not None and call.now is None:
            call = call.model_copy(update={"now": self.now})
        if self.token_id is not None and call.token_id is None:
            call = call.model_copy(update={"token_id": self.token_id})
        try:
            answer = await self.stub.serve(name, dump_call(call))
            reply = Reply[op.done].model_validate_json(str(answer))  # type: ignore[name-defined]
        except Exception as exc:
            raise WriterUnavailable(f"the user's writer did not answer {name}: {exc}") from exc
        self.costs = reply.costs
        if reply.refusal is not None:
            raise WriterRefused(reply.refusal)
        if reply.result is None:
            raise WriterUnavailable(f"the user's writer answered {name} with no result")
        return reply.result
