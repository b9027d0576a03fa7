"""How long work on one request shares the isolate with others: it gives them a turn once it
has held the event loop for `YIELD_AFTER_S`, or examined `MAX_CHARS_PER_YIELD` characters
since their last turn, whichever comes first.

Time is what another user feels. Characters are the bound that holds where a clock does not
move while code runs (a Worker's clock advances only across I/O) and the one a test can check:
each step of paced work is linear in the characters it reads (a rules sentence, at most
sentences.MAX_SENTENCE; a slice of a message being normalised for grounding; one candidate
checked), so the characters since the last turn bound the time since it. Yielding every N
sentences, as detection did, let 50 long sentences of KPI words hold the host for seconds.

Every stage of an extraction that reads the conversation goes through one `Pacer` (the rules'
detection, the grounding context and the candidates' checks): on the local host the Worker,
every user's writer and their jobs share one event loop, so a stage that does not yield holds
up everyone.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import TypeVar

T = TypeVar("T")

#: Paced work as a generator: it yields the characters each step examined and returns its
#: result. `run` drains it at once (CPython callers, tests); `Pacer.run` gives other requests
#: their turns between its steps.
Steps = Generator[int, None, T]

#: Longest paced work holds the event loop before other requests get a turn.
YIELD_AFTER_S = 0.02
#: Most characters examined between two turns, whatever the clock says.
MAX_CHARS_PER_YIELD = 20_000
#: How long a turn lasts. Not 0: `sleep(0)` only queues the work behind what is ready now,
#: and another request's next step (an answer from KV or the writer arriving) is often not
#: ready yet, so each of its steps waited out a whole stretch of paced work. A pause of a few
#: ms lets what arrives meanwhile run first: on the local host, during a 1 MB job (one pair
#: of runs at load 5), another user's /healthz went from 223 to 86 ms (median) and a PUT
#: from 818 to 513 ms; the job's ~540 turns cost it ~1.6 s of ~40 s. (On Pyodide a sleep
#: over 2 ms is a timer; 0 is setImmediate.)
TURN_PAUSE_S = 0.003


@dataclass
class Pacer:
    """Counts the work since other requests last had a turn and says when they are due one."""

    clock: Callable[[], float] = time.monotonic
    chars: int = 0
    since: float = field(init=False)

    def __post_init__(self) -> None:
        self.since = self.clock()

    def due(self, chars: int) -> bool:
        """Add `chars` examined; True when other requests are owed a turn (then `restart`)."""
        self.chars += chars
        return self.chars >= MAX_CHARS_PER_YIELD or self.clock() - self.since >= YIELD_AFTER_S

    def restart(self) -> None:
        """Other requests just had their turn: count afresh."""
        self.chars, self.since = 0, self.clock()

    async def run(self, steps: Steps[T]) -> T:
        """The result of `steps`, with other requests given a turn whenever one is due."""
        while True:
            try:
                chars = next(steps)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
            await self.step(chars)

    async def step(self, chars: int) -> None:
        """Add `chars` examined, and give other requests their turn if one is due."""
        if self.due(chars):
            await asyncio.sleep(TURN_PAUSE_S)
            self.restart()


def run(steps: Steps[T]) -> T:
    """The result of `steps`, all at once."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
