"""Stored numbers written back as people write them."""

from __future__ import annotations

import pytest

from entity_memory.domain.amounts import amount


@pytest.mark.parametrize(
    ("value", "unit", "shown"),
    [
        (1290, "USD", "$1,290"),
        (14.2, "USD", "$14.20"),
        (0.9, "usd", "$0.90"),
        (-35, "USD", "-$35"),
        (1200000, "EUR", "€1,200,000"),
        (7.5, "£", "£7.50"),
        (4.2, "%", "4.2%"),
        (3.1, "x", "3.1x"),
        (12, "calls", "12 calls"),
        (41.0, None, "41"),
        (0.05, "", "0.05"),
        (0.004, "USD", "$0.004"),  # a fraction of a cent is not $0.00
        (0.0125, "USD", "$0.0125"),
        (1290.004, "USD", "$1,290.00"),
        (1234567, None, "1234567"),
        (1e300, "USD", "$1e+300"),
    ],
)
def test_amounts_read_as_written(value: float, unit: str | None, shown: str) -> None:
    assert amount(value, unit) == shown
