"""Vectors small enough to live in the index entries, and fast to score in pure Python.

An entity's vector is kept as its sign bits (1 bit a dimension: 128 bytes for bge-m3, 172
base64 characters), so 10,000 entries add ~1.7 MB to the index instead of ~40 MB of floats.
The task's vector stays in floats and is scored against the bits asymmetrically: quantised
to 8-bit levels and split into bit planes, each plane a Python int, so one entry costs 9
AND + popcount operations on 1,024-bit ints rather than 1,024 multiplications. For unit
vectors, sum(q_i * sign(d_i)) ~ sqrt(2 * dims / pi) * cos(q, d), which turns the score back
into an estimated cosine.
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Sequence
from dataclasses import dataclass

#: Magnitude bits of the quantised query (QueryPlanes.cosines assumes 3: four planes). The
#: stored side has one bit a dimension, which bounds precision anyway: 3, 4, 5 and 7 bits rank
#: alike on LoCoMo and the dev probes (R@5/R@10 0.569/0.619 at 3 against 0.568/0.619 at 7;
#: dev hit@5/hit@10 0.717/0.855 both), and 4 planes cost half the popcounts of 8.
QUERY_BITS = 3


#: Decimals kept of the stored mean vector (it is a reference point, not a measurement).
CENTER_DECIMALS = 5


def running_mean(
    center: Sequence[float] | None, count: int, vectors: Sequence[Sequence[float]]
) -> tuple[list[float], int]:
    """The mean of `count` earlier vectors (`center`) and `vectors`, and the new count."""
    if not vectors:
        return list(center or []), count
    total = [0.0] * len(vectors[0])
    if center is not None and len(center) == len(total):
        total = [c * count for c in center]
    else:
        count = 0
    for v in vectors:
        for i, x in enumerate(v):
            total[i] += x
    n = count + len(vectors)
    return [round(t / n, CENTER_DECIMALS) for t in total], n


def centred(vector: Sequence[float], center: Sequence[float] | None) -> list[float]:
    if center is None or len(center) != len(vector):
        return list(vector)
    return [x - c for x, c in zip(vector, center, strict=True)]


def pack_signs(vector: Sequence[float]) -> str:
    """The vector's sign bits, base64 (bit i set when component i is positive)."""
    bits = 0
    for i, x in enumerate(vector):
        if x > 0:
            bits |= 1 << i
    return base64.b64encode(bits.to_bytes((len(vector) + 7) // 8, "little")).decode("ascii")


def unpack_signs(packed: str) -> int:
    # binascii directly: base64.b64decode's argument checks cost more than the decoding.
    return int.from_bytes(binascii.a2b_base64(packed), "little")


@dataclass(frozen=True)
class QueryPlanes:
    """A unit query vector as bit planes, ready to score packed entries.

    Each component is quantised to a signed level in [-top, top] and stored offset by `top`
    (so every level is a non-negative QUERY_BITS + 1 bit number): the sum of the levels where
    an entry's bit is set is then sum_p 2^p * popcount(plane_p & bits) - top * popcount(bits),
    QUERY_BITS + 2 popcounts an entry instead of one pair per magnitude bit and sign.
    """

    dims: int
    planes: tuple[int, ...]
    offset: int  # the level added to every component to make it non-negative
    scale: float  # float value of one quantisation step
    total: float  # sum of the query's components
    to_cosine: float  # sqrt(pi / (2 * dims))

    @classmethod
    def of(cls, vector: Sequence[float]) -> QueryPlanes:
        norm = math.sqrt(sum(x * x for x in vector)) or 1.0
        unit = [x / norm for x in vector]
        peak = max((abs(x) for x in unit), default=0.0) or 1.0
        top = (1 << QUERY_BITS) - 1
        levels = [round(x / peak * top) + top for x in unit]
        planes = [0] * (QUERY_BITS + 1)
        for i, level in enumerate(levels):
            for p in range(QUERY_BITS + 1):
                if level >> p & 1:
                    planes[p] |= 1 << i
        return cls(
            dims=len(unit),
            planes=tuple(planes),
            offset=top,
            scale=peak / top,
            total=(sum(levels) - top * len(levels)) * (peak / top),
            to_cosine=math.sqrt(math.pi / (2 * len(unit))) if unit else 0.0,
        )

    def cosine(self, signs: int) -> float:
        """Estimated cosine between the query and an entry's packed sign bits."""
        on = -self.offset * signs.bit_count()
        for p, plane in enumerate(self.planes):
            on += (plane & signs).bit_count() << p
        # sum(q_i * s_i) with s_i = +1 for set bits, -1 otherwise.
        dot = 2 * on * self.scale - self.total
        return dot * self.to_cosine

    def cosines(self, many: Sequence[int | None]) -> list[float | None]:
        """`cosine` of every entry (None stays None), for ranking a whole index.

        The four planes are written out: in Pyodide a loop per entry costs half as much
        again as the expression below.
        """
        p0, p1, p2, p3 = self.planes
        step, shift = 2 * self.scale * self.to_cosine, self.total * self.to_cosine
        offset = self.offset
        return [
            None
            if s is None
            else step
            * (
                (p0 & s).bit_count()
                + ((p1 & s).bit_count() << 1)
                + ((p2 & s).bit_count() << 2)
                + ((p3 & s).bit_count() << 3)
                - offset * s.bit_count()
            )
            - shift
            for s in many
        ]


#: How many entries with vectors rescaling needs; below it, ranking is lexical only.
MIN_ENTRIES_FOR_SEMANTIC = 3


def rescale(cosines: Sequence[float | None]) -> list[float | None]:
    """Each estimated cosine as 0..1 relevance, min-max over the user's entries with vectors.

    Raw cosines are not comparable across models, so they are read relative to the user's
    own entries: the closest entry gets 1, the farthest 0, with no per-model constant. On
    the dev probes (bench/bench_retrieval.py) min-max beat a z-score reading (relevance from
    one standard deviation above the mean) on hit@5 at every semantic share and quantisation.
    """
    present = [c for c in cosines if c is not None]
    if len(present) < MIN_ENTRIES_FOR_SEMANTIC:
        return [None] * len(cosines)
    low, high = min(present), max(present)
    if high == low:
        return [None if c is None else 0.0 for c in cosines]
    return [None if c is None else (c - low) / (high - low) for c in cosines]
