"""How a new mention of an entity becomes its next stored state (SPEC best practices 2 and 7).

Upsert, never duplicate: version + 1, `createdAt` kept, a lower new importance averaged with
the old one. Beyond the SPEC's whole-document overwrite, metadata merges field by field (a
mention that omits the budget does not erase it), metric values accumulate a bounded history,
a pain point that comes back in a new session counts one more occurrence, and a mention that
adds nothing is `unchanged`, so it costs no KV write and no new version.

Facts, not pasted sentences: `content` is the newest summary (it replaces the old one, never
appended to it); a metric's `value` and `target` are separate fields and only values become
history observations; each write appends its provenance (excerpt, session, time, extractor)
to a bounded list, and `extractor` says who wrote the current version ("api" for a client).
A mention that changes nothing stays `unchanged` and so records no provenance either: a
confirmation is not worth a write.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from entity_memory.domain.amounts import mentions_of
from entity_memory.domain.keys import slug_for
from entity_memory.domain.kind import kind_of
from entity_memory.domain.models import (
    MAX_ALIASES,
    METRIC_HISTORY_LIMIT,
    PROVENANCE_LIMIT,
    BaseEntity,
    EntityInputBase,
)
from entity_memory.domain.task_dates import after_today, day_of, measured_ms
from entity_memory.domain.text import normalize_name, tokenize
from entity_memory.domain.vocab import BID_STRATEGIES, STATUSES

Status = Literal["created", "updated", "unchanged"]


@dataclass(frozen=True)
class Change:
    old: Any
    new: Any


@dataclass(frozen=True)
class Observed:
    """What a write did to a metric's series, before the history was cut to the observations
    KV keeps: the ledger keeps the whole series, so it needs every one."""

    #: Observations this write added (or that replaced one of the same session and day).
    added: list[dict[str, Any]] = field(default_factory=list)
    #: Observations they replaced.
    replaced: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def told_at_update(cls, entity: BaseEntity) -> Observed:
        """A metric's observations told at its last update: what the write of that version
        added (a version the ledger missed is recorded from KV alone)."""
        history = getattr(getattr(entity, "metadata", None), "history", None) or []
        return cls(added=[h.to_json_dict() for h in history if h.at == entity.updated_at])


@dataclass
class MergeResult:
    entity: BaseEntity
    status: Status
    #: Field path (`content`, `metadata.strategy`, ...) -> old and new value.
    changes: dict[str, Change] = field(default_factory=dict)
    observed: Observed = field(default_factory=Observed)


def entity_id_for(item: EntityInputBase) -> str:
    return item.id or slug_for(item.name)


def _merge_aliases(name: str, *alias_lists: list[str]) -> list[str]:
    seen = {normalize_name(name)}
    merged: list[str] = []
    for aliases in alias_lists:
        for alias in aliases:
            norm = normalize_name(alias)
            if norm and norm not in seen:
                seen.add(norm)
                merged.append(alias)
    return merged[:MAX_ALIASES]


#: The extractor recorded for a write that named none (a client's own PUT / `remember`).
CLIENT_WRITER = "api"


def _observation(
    value: float, now: int, session_id: str, observed_on: str | None = None
) -> dict[str, Any]:
    obs: dict[str, Any] = {"value": value, "at": now, "sessionId": session_id}
    if observed_on:
        obs["observedOn"] = observed_on
    return obs


def new_provenance(item: EntityInputBase, session_id: str, now: int) -> list[dict[str, Any]]:
    """The provenance entries this write brings: the item's own, else one from its `source`;
    session and time default to the write's."""
    entries = [p.to_json_dict() for p in item.provenance]
    if not entries and item.source:
        entries = [{"excerpt": item.source}]
    for entry in entries:
        entry["sessionId"] = entry.get("sessionId") or session_id
        entry["at"] = entry.get("at") if entry.get("at") is not None else now
    return entries


def _merge_provenance(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen = {(p.get("excerpt"), p.get("sessionId")) for p in old}
    merged = list(old)
    for entry in new:
        key = (entry.get("excerpt"), entry.get("sessionId"))
        if key not in seen:
            seen.add(key)
            merged.append(entry)
    if len(merged) <= PROVENANCE_LIMIT:
        return merged
    # The first source stays with the newest: when the fact was first said (a decision's
    # date, for its outcome) is not pushed out by later mentions.
    return [merged[0], *merged[-(PROVENANCE_LIMIT - 1) :]]


def _writer(new: list[dict[str, Any]]) -> str:
    for entry in reversed(new):
        if entry.get("extractor"):
            return str(entry["extractor"])
    return CLIENT_WRITER


def _merge_metric_history(
    old_history: list[dict[str, Any]],
    new_meta: dict[str, Any],
    explicit_history: bool,
    now: int,
    session_id: str,
) -> tuple[list[dict[str, Any]], Observed]:
    history = list(old_history)
    observed = Observed()
    if explicit_history:
        known = {(h["at"], h["value"]) for h in history}
        sent = [h for h in new_meta.get("history", []) if (h["at"], h["value"]) not in known]
        history += sent
        observed.added.extend(sent)
    value, day = new_meta.get("value"), _not_after(new_meta.get("observedOn"), now)
    if value is not None:
        # One observation per metric, session and day measured: a session says what the value
        # was when it happened, so a later value in the same session (a later chunk, or the
        # whole session sent again) replaces that session's observation instead of adding
        # another (issue 21); values it dates on other days are observations of their own,
        # and a value dated on an earlier day replaces what any session said of that day.
        key = _day_key(day, now)
        mine = [
            i
            for i, h in enumerate(history)
            if _day_key(h.get("observedOn"), int(h.get("at") or 0)) == key
            and (key is not None or h.get("sessionId") == session_id)
        ]
        if not mine:
            history.append(_observation(value, now, session_id, day))
            observed.added.append(history[-1])
        elif history[mine[-1]]["value"] != value:
            observed.replaced.append(history[mine[-1]])
            at = history[mine[-1]]["at"]
            history[mine[-1]] = _observation(value, at, session_id, day)
            observed.added.append(history[mine[-1]])
    # In the order measured, and the latest measured kept: a backfill of older values does
    # not push out the newest.
    history.sort(key=_measured)
    return history[-METRIC_HISTORY_LIMIT:], observed


def _day_key(day: str | None, told_at: int) -> str | None:
    """The day a value was measured on, None when that is the day it was told."""
    return None if day is None or day == day_of(told_at) else day


def _not_after(day: str | None, now: int) -> str | None:
    """A day a value was measured on, if it is not after the day it is told. A future day
    is a slip, and the latest measured value is the current one: it would hold that place
    against every real value after it."""
    return None if day is None or after_today(day, now) else day


def _measured(observation: dict[str, Any]) -> int:
    return measured_ms(observation.get("observedOn"), int(observation.get("at") or 0))


def _merge_metadata(
    entity_type: str,
    old: dict[str, Any],
    item: EntityInputBase,
    now: int,
    session_id: str,
    same_session: bool,
) -> tuple[dict[str, Any], Observed]:
    new_model = item.metadata  # type: ignore[attr-defined]
    new_meta = new_model.to_json_dict()
    fields = type(new_model).model_fields
    explicit = {fields[f].alias or f for f in new_model.model_fields_set}
    merged = dict(old)
    observed = Observed()
    for key in explicit:
        if key != "history":
            merged[key] = new_meta[key]
    kind = kind_of(entity_type)
    if kind.keeps_series:
        merged["history"], observed = _merge_metric_history(
            old.get("history", []), new_meta, "history" in explicit, now, session_id
        )
        if new_meta.get("observedOn") and not _not_after(new_meta["observedOn"], now):
            merged.pop("observedOn", None)
        if new_meta.get("value") is not None and merged["history"]:
            # The current value is the latest measured, wherever the new one stands: a value
            # measured before the stored one is history, and a value without a day does not
            # inherit the day of the one it replaces.
            latest = merged["history"][-1]
            merged["value"] = latest["value"]
            merged.pop("observedOn", None)
            if latest.get("observedOn"):
                merged["observedOn"] = latest["observedOn"]
    if kind.counts_returns and not same_session and not new_meta.get("resolved"):
        # It came back; a session that says it is resolved is no new occurrence of it.
        merged["frequency"] = int(old.get("frequency", 1)) + int(new_meta.get("frequency", 1))
    return merged, observed


def _new_entity(
    item: EntityInputBase, user_id: str, session_id: str, now: int
) -> tuple[BaseEntity, Observed]:
    data = item.to_json_dict()
    data.pop("source", None)
    provenance = new_provenance(item, session_id, now)
    data.update(
        provenance=_merge_provenance([], provenance),
        extractor=_writer(provenance),
        id=entity_id_for(item),
        userId=user_id,
        createdAt=now,
        updatedAt=now,
        sessionId=session_id,
        version=1,
        aliases=_merge_aliases(item.name, item.aliases),
    )
    observed = Observed()
    kind = kind_of(data["type"])
    if kind.keeps_series:
        meta = data["metadata"]
        meta["history"], observed = _merge_metric_history(
            [], meta, bool(meta["history"]), now, session_id
        )
        if meta.get("observedOn") and not _not_after(meta["observedOn"], now):
            meta.pop("observedOn")
    return kind.entity_model.model_validate(data), observed


def _content(sent: str, old: BaseEntity, old_meta: dict[str, Any], new_meta: dict[str, Any]) -> str:
    """A sentence sent replaces the stored one. Without one, the stored sentence stays unless
    the write changed a field it states: "bids on Manual CPC, $90 a day" is no longer
    true once the strategy is target CPA, and the block would print it beside the new fields
    (issue 22 item 1). The version history keeps it; the fields say what is true now. (A
    sentence resent as it was is the client's to say: judging it against the stored one would
    make the same write give two states when retried.)"""
    if sent:
        return sent
    for key in kind_of(old.type).shown_fields:
        before, after = old_meta.get(key), new_meta.get(key)
        if before is None or same_value(before, after):
            continue
        if _states(old.content, before) or _names_a(key, old.content):
            return ""
    return old.content


#: How a sentence names a bid strategy or a campaign status in other words than the stored
#: value ("manual bidding" for "Manual CPC", "live" for "enabled"): the vocabulary's.
_FIELD_WORDS: dict[str, re.Pattern[str]] = {
    "strategy": re.compile("|".join(rf"\b(?:{p})\b" for p, _ in BID_STRATEGIES), re.I),
    "status": re.compile(r"\b(?:" + "|".join(STATUSES) + r")\b", re.I),
}


def _names_a(key: str, text: str) -> bool:
    """Whether `text` names some strategy or status (when `key` is one): it states that field."""
    pattern = _FIELD_WORDS.get(key)
    return pattern is not None and pattern.search(text) is not None


def same_value(a: object, b: object) -> bool:
    """Equal, or the same words written otherwise ("target CPA" and "Target CPA"; not "no
    weekly reports" and "weekly reports")."""
    if isinstance(a, str) and isinstance(b, str):
        return normalize_name(a) == normalize_name(b)
    return a == b


def _states(text: str, value: object) -> bool:
    """Whether `text` says `value`: the number, or every word of it."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return bool(mentions_of(float(value), text))
    words = set(tokenize(str(value)))
    return bool(words) and words <= set(tokenize(text))


def _diff(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Change]:
    changes: dict[str, Change] = {}
    for key in ("name", "content", "aliases"):
        if old.get(key) != new.get(key):
            changes[key] = Change(old.get(key), new.get(key))
    old_meta, new_meta = old.get("metadata", {}), new.get("metadata", {})
    for key in sorted(set(old_meta) | set(new_meta)):
        if old_meta.get(key) != new_meta.get(key):
            changes[f"metadata.{key}"] = Change(old_meta.get(key), new_meta.get(key))
    return changes


#: Units one ratio is written in, and the factor from the first to the second: a ROAS is
#: "405%" or "4.05x", one value either way.
_RATIO_UNITS = {("x", "%"): 100.0, ("%", "x"): 0.01}


def in_stored_unit(item: EntityInputBase, old: BaseEntity) -> EntityInputBase:
    """A metric's new value and target in the unit its stored values have, when the mention
    writes the same ratio the other way (4.05x for a metric kept in %): otherwise its history
    would hold 360 beside 4.05 and its trend read a fall of 99%."""
    if item.type != old.type or not kind_of(old.type).keeps_series:  # type: ignore[attr-defined]
        return item
    new_meta, old_unit = item.metadata, getattr(old.metadata, "unit", None)  # type: ignore[attr-defined]
    factor = _RATIO_UNITS.get(((new_meta.unit or "").lower(), (old_unit or "").lower()))
    if factor is None:
        return item
    update: dict[str, Any] = {"unit": old_unit}
    for key in ("value", "target"):
        if getattr(new_meta, key) is not None:
            update[key] = round(getattr(new_meta, key) * factor, 6)
    data = {
        **new_meta.model_dump(by_alias=True, exclude_unset=True),
        **{type(new_meta).model_fields[k].alias or k: v for k, v in update.items()},
    }
    return item.model_copy(update={"metadata": type(new_meta).model_validate(data)})


def merge(
    old: BaseEntity | None, item: EntityInputBase, user_id: str, session_id: str, now: int
) -> MergeResult:
    """The state after `item` is mentioned in `session_id` at `now` (epoch ms)."""
    if old is None:
        entity, observed = _new_entity(item, user_id, session_id, now)
        return MergeResult(entity, "created", observed=observed)

    item = in_stored_unit(item, old)
    before = old.to_json_dict()
    same_name = normalize_name(item.name) == normalize_name(old.name)
    name = old.name if same_name else item.name
    provenance = new_provenance(item, session_id, now)
    metadata, observed = _merge_metadata(
        old.type, before["metadata"], item, now, session_id, session_id == old.session_id
    )
    after = dict(before)
    after.update(
        name=name,
        content=_content(item.content, old, before["metadata"], metadata),
        aliases=_merge_aliases(name, old.aliases, item.aliases, [] if same_name else [old.name]),
        metadata=metadata,
    )
    changes = _diff(before, after)
    if "importance" not in item.model_fields_set:
        importance = old.importance  # not said: the default 0.5 is no opinion to average in
    elif item.importance < old.importance:
        importance = (item.importance + old.importance) / 2
    else:
        importance = item.importance
    if not changes and importance <= old.importance:
        return MergeResult(old, "unchanged")
    if importance != old.importance:
        changes["importance"] = Change(old.importance, importance)
    after.update(
        provenance=_merge_provenance(before.get("provenance", []), provenance),
        extractor=_writer(provenance),
        importance=importance,
        updatedAt=now,
        sessionId=session_id,
        version=old.version + 1,
        createdAt=old.created_at,
    )
    entity = kind_of(old.type).entity_model.model_validate(after)
    return MergeResult(entity, "updated", changes, observed)
