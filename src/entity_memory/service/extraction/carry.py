"""Stage 4b, carry: a campaign's newer reading of a KPI lands on that campaign's metric of the
KPI as well, with its history.

A model reports a campaign's latest figures in its `lastPerformance` ("Alder Farm Boxes: cost
per order now $19") and often leaves the dedicated metric ("Alder Farm Boxes CPA", stored at
$24 two sessions ago) out of its reply: the memory then holds two answers to one question,
the older one in the entity that owns the series. A reading is carried to the metric only
when it is clearly the same series: the same canonical KPI, no qualifying word on either side
("search lost impression share" is not "impression share"), the same counted thing for a CPA,
the metric linked to that very campaign and the only one that fits, a value of the same
magnitude as the stored one (a ratio written the other way, 3.9 for a metric kept at 410%,
is read in the metric's unit), and a reading that is new: the stored campaign did not
already hold it, and neither the reply nor an earlier write of this session updated that
metric. It is one more observation of the series (merge.py), dated as the session is, so
the metric's value is the latest measured and the old one stays in its history.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from entity_memory.domain.amounts import mentions_of
from entity_memory.domain.keys import entity_key
from entity_memory.domain.kinds import CAMPAIGN, METRIC
from entity_memory.domain.kinds.campaign import CampaignInput
from entity_memory.domain.kinds.metric import MetricInput
from entity_memory.domain.kpi import (
    canonical_kpi,
    counted_thing,
    metric_counts,
    metric_kpi,
    qualifier,
)
from entity_memory.domain.links import EntityNames, campaign_key
from entity_memory.domain.models import BaseEntity, EntityIndex, EntityInputBase, IndexEntry
from entity_memory.domain.task_dates import day_of
from entity_memory.extraction.resolve import campaign_called
from entity_memory.service.batch_upsert import UpsertStore

#: A carried reading is of the stored series when it is within this factor of the stored
#: value (a CPA from $40 to $70 is a change; 0.04 against 410 is another quantity or scale).
SAME_MAGNITUDE = 5.0
#: Units one ratio is written in: a reading 100 times off may be the same ratio ("x" / "%").
_RATIO_UNITS = frozenset({"%", "x"})


@dataclass(frozen=True)
class Reading:
    """One figure of a campaign mention's `lastPerformance`."""

    #: The campaign: a stored one's id, else its name as a metric's pending link holds it.
    campaign_id: str
    #: The stored campaign's id (None: the campaign is new in this reply).
    stored_id: str | None
    label: str
    #: Its canonical KPI, or None for a KPI the vocabulary does not fold ("impression share").
    kpi: str | None
    #: The label's words besides its KPI: what the metric's name must say besides its campaign.
    words: frozenset[str]
    counts: str | None
    value: float
    mention: EntityInputBase


#: What a figure measures: its canonical KPI (None: named in words of its own), its other
#: words, and for a cost per some thing, that thing.
Measure = tuple[str | None, frozenset[str], str | None]


def label_measure(label: str) -> Measure | None:
    """What a `lastPerformance` label measures: a canonical KPI with no qualifying word ("cost
    per <thing>" is a CPA counting that thing), or a KPI named in words of its own; None for
    a qualified canonical KPI ("search lost IS (budget)")."""
    counts = counted_thing(label)
    kpi = canonical_kpi(label) or ("CPA" if counts else None)
    words = qualifier(label)
    return None if (kpi is None) == (not words) else (kpi, words, counts)


def readings(items: Sequence[EntityInputBase], names: EntityNames) -> list[Reading]:
    """The campaign mentions' readings: of a canonical KPI with no qualifying word in their
    label ("cost per <thing>" is a CPA counting that thing), or of a KPI named in words of
    its own. Each is keyed by its campaign as a stored metric's link reads it: the stored
    campaign's id, or the name of a campaign new in this reply (a metric written before it
    waits on that name)."""
    out: list[Reading] = []
    for item in items:
        if item.type != CAMPAIGN.type:  # type: ignore[attr-defined]
            continue
        for label, value in (item.metadata.last_performance or {}).items():  # type: ignore[attr-defined]
            measure = label_measure(label)
            if measure is None:
                continue
            kpi, words, counts = measure
            stored = item.id if item.id in names.names else None
            owner = stored or campaign_key(item.name)
            out.append(Reading(owner, stored, label, kpi, words, counts, value, item))
    return out


def _owner(entry: IndexEntry, names: EntityNames) -> str | None:
    if entry.links:
        return entry.links[0]
    return campaign_called(entry.pending_links[0], names) if entry.pending_links else None


def _words(entry_name: str, owner: str, names: EntityNames) -> frozenset[str]:
    """What the metric's name says besides its canonical KPI and its campaign."""
    owned = [*names.names.get(owner, []), owner]
    return qualifier(entry_name, [*owned, *(w for n in owned for w in n.split())])


def metric_for(reading: Reading, index: EntityIndex, names: EntityNames) -> IndexEntry | None:
    """The only stored metric of the reading's campaign that measures what it does: the same
    canonical KPI, the same other words, and for a cost per some thing, a metric that says it
    counts that very thing (a plain CPA may count something else)."""
    found = [
        entry
        for entry in index.entries
        if entry.type == METRIC.type
        and entry.kpi == reading.kpi
        and _owner(entry, names) == reading.campaign_id
        and _words(entry.name, reading.campaign_id, names) == reading.words
        and (entry.counts == reading.counts if reading.counts else True)
    ]
    return found[0] if len(found) == 1 else None


def _reported(items: Sequence[EntityInputBase]) -> set[str]:
    """The stored metrics (ids) the reply updates itself: what it says of them stands."""
    return {i.id for i in items if i.type == METRIC.type and i.id}  # type: ignore[attr-defined]


def in_series(value: float, stored: float | None, unit: str | None) -> float | None:
    """The reading in the stored series' scale, or None when it is not clearly of it."""
    if stored is None or stored <= 0 or value <= 0:
        return None
    scales = [1.0]
    if (unit or "").lower() in _RATIO_UNITS:
        scales += [100.0, 0.01]
    for scale in scales:
        ratio = value * scale / stored
        if 1 / SAME_MAGNITUDE <= ratio <= SAME_MAGNITUDE:
            return round(value * scale, 6)
    return None


def _held_before(reading: Reading, campaign: BaseEntity | None) -> bool:
    """The stored campaign already held this reading: a restatement, not a new one."""
    if campaign is None:
        return False
    before = getattr(campaign.metadata, "last_performance", None) or {}
    return any(canonical_kpi(k) == reading.kpi and v == reading.value for k, v in before.items())


def carried_item(reading: Reading, metric: BaseEntity, session_id: str) -> MetricInput | None:
    """The metric's next observation from the reading, or None when it is no new reading."""
    meta = metric.metadata
    history = getattr(meta, "history", None) or []
    if history and history[-1].session_id == session_id:
        return None  # this session already wrote the metric's latest value
    value = in_series(reading.value, meta.value, meta.unit)  # type: ignore[attr-defined]
    if value is None or value == meta.value:  # type: ignore[attr-defined]
        return None
    said = reading.mention.content
    return MetricInput.model_validate(
        {
            "type": METRIC.type,
            "id": metric.id,
            "name": metric.name,
            "content": said if mentions_of(reading.value, said) else "",
            "metadata": {
                "kpi": meta.kpi,  # type: ignore[attr-defined]
                "value": value,
                "unit": meta.unit,  # type: ignore[attr-defined]
                "campaign": meta.campaign,  # type: ignore[attr-defined]
            },
            "provenance": [p.to_json_dict() for p in reading.mention.provenance],
        }
    )


async def carry_readings(
    store: UpsertStore,
    user_id: str,
    session_id: str,
    items: Sequence[EntityInputBase],
    index: EntityIndex,
) -> list[EntityInputBase]:
    """`items` and, after them, the metric observations their campaigns' readings carry (one
    bulk read of the metrics and campaigns concerned, only when a reading may carry)."""
    names = EntityNames(index.entries)
    reported = _reported(items)
    pairs = [
        (reading, entry)
        for reading in readings(items, names)
        if (entry := metric_for(reading, index, names)) is not None and entry.id not in reported
    ]
    if not pairs:
        return list(items)
    keys = {(METRIC.type, e.id): entity_key(user_id, METRIC.type, e.id) for _, e in pairs}
    for reading, _ in pairs:
        if reading.stored_id:
            keys[(CAMPAIGN.type, reading.stored_id)] = entity_key(
                user_id, CAMPAIGN.type, reading.stored_id
            )
    stored = await store.get_many(list(keys.values()))
    carried: dict[str, EntityInputBase] = {}
    for reading, entry in pairs:
        metric = stored.get(keys[(METRIC.type, entry.id)])
        at = keys.get((CAMPAIGN.type, reading.stored_id or ""))
        campaign = stored.get(at) if at else None
        if metric is None or entry.id in carried or _held_before(reading, campaign):
            continue
        item = carried_item(reading, metric, session_id)
        if item is not None:
            carried[entry.id] = item
    return [*items, *carried.values()]


def _metric_measure(item: EntityInputBase, owner: str, names: EntityNames) -> Measure:
    meta = item.metadata  # type: ignore[attr-defined]
    counts = metric_counts(item.name, meta, item.content)
    kpi = metric_kpi(item.name, meta) or ("CPA" if counted_thing(meta.kpi) else None)
    return kpi, _words(item.name, owner, names), counts


def _same_measure(label: Measure, metric: Measure) -> bool:
    """A snapshot's figure and a metric measure one thing: the same KPI and words, and the
    same counted thing where the figure names one."""
    return label[:2] == metric[:2] and (label[2] is None or label[2] == metric[2])


def _newer_metrics(
    items: Sequence[EntityInputBase], names: EntityNames
) -> dict[str, list[EntityInputBase]]:
    """The reply's metric values by stored campaign (id), leaving out the campaigns whose
    figures the reply states itself."""
    set_here = {
        i.id
        for i in items
        if i.type == CAMPAIGN.type and i.metadata.last_performance  # type: ignore[attr-defined]
    }
    out: dict[str, list[EntityInputBase]] = {}
    for item in items:
        if item.type != METRIC.type or item.metadata.value is None:  # type: ignore[attr-defined]
            continue
        stated = item.metadata.campaign  # type: ignore[attr-defined]
        owner = campaign_called(stated, names) if stated else names.named_in(item.name)
        if owner in names.names and owner not in set_here:
            out.setdefault(owner, []).append(item)
    return out


def refreshed_snapshot(
    campaign: BaseEntity, metrics: Sequence[EntityInputBase], names: EntityNames
) -> dict[str, float] | None:
    """The campaign's `lastPerformance` after newer values of its own figures, or None when
    no figure of it is measured anew. The figures a newer value replaces are kept in its
    series; the snapshot's others were of the older reading and are left out, not shown
    beside the newer ones as if measured together (the version history keeps them)."""
    snapshot = getattr(campaign.metadata, "last_performance", None) or {}
    fresh: dict[str, float] = {}
    for label, old in snapshot.items():
        measure = label_measure(label)
        for item in metrics if measure is not None else ():
            meta = item.metadata  # type: ignore[attr-defined]
            if meta.observed_on and meta.observed_on < day_of(campaign.updated_at):
                continue  # measured before the campaign was last written
            if _same_measure(measure, _metric_measure(item, campaign.id, names)):  # type: ignore[arg-type]
                value = in_series(meta.value, old, meta.unit)
                if value is not None:
                    fresh[label] = value
    return fresh if fresh and any(fresh[k] != snapshot[k] for k in fresh) else None


async def refresh_snapshots(
    store: UpsertStore, user_id: str, items: Sequence[EntityInputBase], index: EntityIndex
) -> list[EntityInputBase]:
    """`items` and, after them, the campaigns whose `lastPerformance` the reply's metrics
    measure anew (the other half of the carry: a metric's newer value does not leave its
    campaign showing the older one as its latest)."""
    names = EntityNames(index.entries)
    newer = _newer_metrics(items, names)
    if not newer:
        return list(items)
    keys = {c: entity_key(user_id, CAMPAIGN.type, c) for c in newer}
    stored = await store.get_many(list(keys.values()))
    out = list(items)
    for campaign_id, metrics in newer.items():
        campaign = stored.get(keys[campaign_id])
        fresh = None if campaign is None else refreshed_snapshot(campaign, metrics, names)
        if campaign is None or fresh is None:
            continue
        provenance = [p.to_json_dict() for m in metrics for p in m.provenance][:1]
        out.append(
            CampaignInput.model_validate(
                {
                    "type": CAMPAIGN.type,
                    "id": campaign.id,
                    "name": campaign.name,
                    "metadata": {"lastPerformance": fresh},
                    "provenance": provenance,
                }
            )
        )
    return out
