"""KPI readings from markdown tables: assistants report numbers as tables more often than in
sentences, and the sentence splitter skips table rows.

Two shapes are read:
- one row per campaign, one column per KPI (`| Campaign | Spend | CPA |`): each KPI cell is a
  reading of that campaign, under the column's name;
- one row per KPI, columns for periods or versions (`| Metric | Before | After |`): the row's
  last number is the KPI's current value.
Any other table (no KPI columns, no numbers) gives nothing. The excerpt a reading keeps is made
of the pieces that state it, joined by " … " (the header cell, the row's name and the value),
each piece verbatim, so the grounding checks find every piece in the conversation and the
header's KPI nearest to its value.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from entity_memory.domain.amounts import CURRENCY_CODES
from entity_memory.extraction.base import Message
from entity_memory.extraction.rules.lexicon import (
    CAMPAIGN_HEADER,
    CURRENT_COLUMN,
    EFFICIENCY,
    GOAL_COLUMN,
    KPI_ROW_HEADERS,
    NAME_COLUMNS,
    NOT_A_KPI_COLUMN,
    NOT_CURRENT,
    NUMBER_CELL,
)
from entity_memory.extraction.rules.lexicon.shapes import LABEL_QUALIFIER, TABLE_SEPARATOR

#: A KPI column's name is short; longer headers are notes.
MAX_KPI_WORDS = 4
#: How an excerpt's pieces are joined (grounding reads "…" as an elision).
ELISION = " … "


@dataclass(frozen=True)
class Cell:
    text: str
    value: float
    unit: str | None


@dataclass(frozen=True)
class TableReading:
    """One KPI value a table states: `row` names what the row is about (None for a KPI row);
    `campaign_rows` says the header calls the rows campaigns (else a row is a campaign only
    where the user's campaigns have its name: it may be a keyword, a product, a service)."""

    role: str
    turn: int
    kpi: str
    row: str | None
    cell: Cell
    excerpt: str
    campaign_rows: bool = False
    #: What a KPI row's label says in brackets it is of ("CPA (Lotus)"), if anything.
    of: str | None = None


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def number_cell(text: str) -> Cell | None:
    m = NUMBER_CELL.match(text.strip().replace("**", ""))
    if m is None:
        return None
    value = float(m.group("num").replace(",", "")) * (1000 if m.group("k") else 1)
    unit = CURRENCY_CODES.get(m.group("cur") or "") or m.group("unit") or None
    return Cell(text.strip(), value, unit)


def _tables(content: str) -> Iterator[list[list[str]]]:
    """The tables of one message: header then data rows, separator rows dropped."""
    rows: list[list[str]] = []
    for line in [*content.splitlines(), ""]:
        if line.strip().startswith("|"):
            if not TABLE_SEPARATOR.match(line.strip()):
                rows.append(_cells(line))
        elif rows:
            if len(rows) > 1:
                yield rows
            rows = []


def _kpi_name(header: str) -> str | None:
    words = header.split()
    if not words or len(words) > MAX_KPI_WORDS or header.lower() in NAME_COLUMNS:
        return None
    return header if EFFICIENCY.search(header) and not NOT_A_KPI_COLUMN.search(header) else None


def _by_campaign(role: str, turn: int, table: list[list[str]]) -> Iterator[TableReading]:
    header = table[0]
    campaign_rows = bool(header) and bool(CAMPAIGN_HEADER.search(header[0]))
    for row in table[1:]:
        name = row[0] if row else ""
        if not name or number_cell(name):
            continue
        for i, text in enumerate(row[1:], start=1):
            kpi = _kpi_name(header[i]) if i < len(header) else None
            cell = number_cell(text)
            if kpi and cell:
                excerpt = ELISION.join((kpi, name, cell.text))
                yield TableReading(role, turn, kpi, name, cell, excerpt, campaign_rows)


def _current_column(header: list[str]) -> int | None:
    """The column holding a KPI row's current value: the only one, unless it holds goals; one
    the header calls current, else the last one that is not a target or an earlier period;
    None when every column is."""
    columns = range(1, len(header))
    if len(header) == 2:
        # One column of values ("Last 4 wks"): the period reported, unless it holds goals.
        return None if GOAL_COLUMN.search(header[1]) else 1
    named = [
        i for i in columns if CURRENT_COLUMN.search(header[i]) and not NOT_CURRENT.search(header[i])
    ]
    if named:
        return named[-1]
    usable = [i for i in columns if not NOT_CURRENT.search(header[i])]
    return usable[-1] if usable else None


def _by_kpi(role: str, turn: int, table: list[list[str]]) -> Iterator[TableReading]:
    column = _current_column(table[0])
    if column is None:
        return
    for row in table[1:]:
        qualified = LABEL_QUALIFIER.match(row[0]) if row else None
        kpi = _kpi_name(qualified.group("label") if qualified else row[0]) if row else None
        cell = number_cell(row[column]) if column < len(row) else None
        if kpi and cell:
            excerpt = ELISION.join((row[0] if qualified else kpi, cell.text))
            of = qualified.group("of").strip() if qualified else None
            yield TableReading(role, turn, kpi, None, cell, excerpt, of=of)


def table_readings(messages: list[Message]) -> list[TableReading]:
    """Every KPI value the conversation's tables state, in order."""
    out: list[TableReading] = []
    for turn, message in enumerate(messages):
        for table in _tables(message.content):
            first = table[0][0].strip().lower() if table[0] else ""
            read = _by_kpi if first in KPI_ROW_HEADERS else _by_campaign
            out += read(message.role, turn, table)
    return out
