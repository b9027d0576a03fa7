"""How detection shares the isolate with other requests: it gives them a turn once it has held
the event loop for `YIELD_AFTER_S`, or examined `MAX_CHARS_PER_YIELD` characters since their
last turn, whichever comes first.

Time is what another user feels. Characters are the bound that holds where a clock does not
move while code runs (a Worker's clock advances only across I/O) and the one a test can check:
a sentence's work is linear in its length (sentences.LOOKBACK bounds every look back), and no
sentence is longer than sentences.MAX_SENTENCE. Yielding every N sentences, as detection did,
let 50 long sentences of KPI words hold the host for seconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

#: Longest the rules hold the event loop before other requests get a turn.
YIELD_AFTER_S = 0.02
#: Most characters of sentences examined between two turns, whatever the clock says.
MAX_CHARS_PER_YIELD = 20_000


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
