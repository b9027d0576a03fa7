"""What an entity kind is, and the registry of kinds: the one place a type is described.

A kind (campaign, metric, decision, pain point, preference, or one a deployment adds) carries
everything other modules used to spell out per type: its pydantic models, its KV key
segment, its importance bands, which fields a context line shows and an LLM is offered, its
section in the `<entity_memory>` block, the campaign fields it links by, and how its line
renders. Code that needs any of these asks `kind_of(entity.type)` instead of comparing the
type with a string, so a new kind is one new module (domain/kinds/) and one `register` call.

This module imports no kind: the built-in ones (domain/kinds/) register themselves the first
time the registry is read, so keys, models and the kinds can import it without a cycle.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Generic, Literal, TypeVar, Union

from pydantic import Field, GetCoreSchemaHandler, GetJsonSchemaHandler, TypeAdapter
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, core_schema

from entity_memory.domain.text import normalize_name
from entity_memory.settings import DEFAULT_TTL_DAYS, Settings

if TYPE_CHECKING:
    from entity_memory.domain.llm_item import LlmItem
    from entity_memory.domain.models import BaseEntity, CamelModel, EntityInputBase

#: The package whose import registers the built-in kinds.
_BUILT_IN = "entity_memory.domain.kinds"


def _never(_fact: object) -> bool:
    return False


#: A kind's metadata model (each kind's functions below read their own, typed).
M = TypeVar("M", bound="CamelModel")


def already_said(value: object, said: str) -> bool:
    """Whether the normalised name and sentence `said` hold `value` word for word."""
    return f" {normalize_name(str(value))} " in f" {said} "


def shown_field_facts(meta: CamelModel, fields: tuple[str, ...]) -> str:
    """The facts of a kind with no renderer of its own: each shown field (by its stored,
    camelCase name) as "field value"."""
    by_alias = {info.alias or name: name for name, info in type(meta).model_fields.items()}
    shown = [(f, getattr(meta, by_alias[f], None)) for f in fields if f in by_alias]
    return ", ".join(f"{f} {value}" for f, value in shown if value not in (None, ""))


@dataclass(frozen=True, slots=True)
class MeasuredSeries:
    """What a kind keeping a dated series (a metric) tells the context block of one entity,
    so a decision's line can show what came of it: the campaign it measures, its KPI and
    unit, and its observations as (when measured, value), oldest first."""

    campaign: str | None
    kpi: str
    unit: str | None
    points: tuple[tuple[int, float], ...]


@dataclass(frozen=True, slots=True)
class ImportanceBands:
    """The importance an extractor gives a new fact of this kind (SPEC: explicit decisions
    and stated preferences high, the rest medium). Two extractors, two measures, kept apart
    on purpose: a typed LLM pass gives every item of the kind one figure (`extracted`); the
    rules extractor gives `detected`, or `detected_marked` when its detection carries the
    kind's mark (`marked`: a high severity, a stated target, an accepted proposal)."""

    extracted: float
    detected: float
    detected_marked: float | None = None
    #: Whether a rules detection (any object with the detector's fields) carries the mark.
    marked: Callable[[object], bool] = _never

    def of_detection(self, fact: object) -> float:
        if self.detected_marked is not None and self.marked(fact):
            return self.detected_marked
        return self.detected


@dataclass(frozen=True, slots=True)
class EntityKind(Generic[M]):
    """One entity type, described once (see the module docstring). The functions it holds
    read its own typed metadata (`M`, its `metadata_model`)."""

    #: The type name: the `type` field, the KV key segment (`entity:<user>:<type>:<id>`).
    type: str
    entity_model: type[BaseEntity]
    input_model: type[EntityInputBase]
    metadata_model: type[M]
    importance: ImportanceBands
    #: Its section in the context block: heading, and place (lower first).
    label: str
    section: int
    #: Its line's bracketed facts, from its metadata and the line's name and sentence
    #: (normalised): "strategy tCPA, budget 60", raw (the block neutralises it); None: its
    #: `shown_fields` as "field value".
    #: The third argument is the currency the user's amounts are in (None when unknown or
    #: mixed), for a kind whose fields hold amounts without a unit of their own.
    line_facts: Callable[[M, str, str | None], str] | None = None
    #: The line gives its sentence first, then the facts (a metric's series reads after it).
    facts_after_sentence: bool = False
    #: The campaign its line notes, and by which its section stands entities of one campaign
    #: together (a metric's `campaign`); None: its lines note none.
    line_campaign: Callable[[M], str | None] | None = None
    #: Whether an entity is resolved: a resolved one is left out of the block unless the task
    #: is about it (then marked resolved), and never always-injected; None: it cannot be.
    resolved: Callable[[M], bool] | None = None
    #: Its line shows the measured outcome of what it decided (domain/context.py).
    shows_outcome: bool = False
    #: How a line shown under another entity's line names its kind ("pain point"); None: its
    #: lines always stand in its own section.
    member_label: str | None = None
    #: Metadata fields (by their stored, camelCase names) its context line shows that a stored
    #: sentence may state too: a write changing one makes that sentence stale (domain/merge.py).
    shown_fields: tuple[str, ...] = ()
    #: Its dated series of `value` (kept in `metadata.history`: merge accumulates it), as the
    #: context block reads it; None: it keeps none.
    series: Callable[[M], MeasuredSeries] | None = None
    #: The currency an entity's amounts are in, when it stores one (a metric's unit); None:
    #: it never says.
    currency: Callable[[M], str | None] | None = None
    #: Said again in a new session, it counts one more occurrence (`metadata.frequency`).
    counts_returns: bool = False
    #: Metadata fields an LLM is shown of a known entity of this kind (extraction prompt).
    known_facts: tuple[str, ...] = ()
    #: Metadata fields a typed LLM pass offers for a known entity (what it may update).
    offered_fields: tuple[str, ...] = ()
    #: Metadata fields only the server writes (never asked of an LLM).
    server_fields: frozenset[str] = field(default_factory=frozenset)
    #: Metadata attributes naming the campaigns an entity is about (its links: domain/links.py);
    #: none: it links to nothing.
    campaign_fields: tuple[str, ...] = ()
    #: The kind others link to by name (a campaign: their `campaign_fields` name it).
    link_target: bool = False
    #: The kind an `addresses_pain_points` kind names as what it is meant to fix.
    addressed: bool = False
    #: Whether it names the pain points it is meant to fix (a decision's `addresses`).
    addresses_pain_points: bool = False
    #: How many of its entities linked to a chosen campaign come along with it (selection);
    #: 0: none are brought by a campaign.
    companions: int = 0
    #: Which of those it brings: the best ranked, or the newest (what was last done).
    companions_newest: bool = False
    #: Other words a model uses for the kind, folded (no `_`, no spaces: "painpoint", "kpi").
    llm_words: frozenset[str] = field(default_factory=frozenset)
    #: Words (as `domain/text.tokenize` gives them) by which a task asks for the kind itself
    #: ("the performance report", "the numbers"): its best entities are the task's even
    #: when none shares another word with it (domain/selection.py).
    task_words: frozenset[str] = field(default_factory=frozenset)
    #: Injected into every context whatever the task (the SPEC: preferences, pain points).
    always_injected: bool = False
    #: Resolved by meaning (embedding) as well as by name when extraction finds one.
    resolved_semantically: bool = False
    #: A typed LLM pass: items asked at most, and output tokens one item needs.
    llm_max_items: int = 5
    llm_item_tokens: int = 50
    #: Days its entities live after their last write (SPEC best practice 5), and the variable
    #: (settings.EnvVar) a deployment overrides that with; None: no variable.
    ttl_days: int = DEFAULT_TTL_DAYS
    ttl_var: str | None = None
    #: The metadata the inspector's "add" form starts from (an example a user edits).
    example_metadata: Mapping[str, Any] = field(default_factory=dict)
    #: What a typed LLM pass asks of it (domain/llm_item.py); None: no typed pass asks for it.
    llm_item: type[LlmItem] | None = None

    @property
    def plural(self) -> str:
        """Its entities, as a heading says it ("Pain points")."""
        return self.type.replace("_", " ").capitalize() + "s"

    @property
    def keeps_series(self) -> bool:
        """Keeps a dated series of `value` in `metadata.history` (merge accumulates it)."""
        return self.series is not None

    def ttl_seconds(self, settings: Settings) -> int:
        """Its entities' KV TTL: its variable's value where the deployment set it."""
        return settings.ttl_seconds(self.ttl_var, self.ttl_days)

    def metadata_of(self, entity: BaseEntity) -> M:
        """An entity's typed metadata (every kind's entity model has its `metadata_model`)."""
        return entity.metadata  # type: ignore[attr-defined,no-any-return]

    def facts(self, entity: BaseEntity, said: str, currency: str | None = None) -> str:
        """The facts its context line shows (`said`: the line's name and sentence, normalised,
        so a field they already say word for word is not said twice; `currency`: the one the
        user's stored amounts are in, if they agree on one)."""
        meta = self.metadata_of(entity)
        if self.line_facts is None:
            return shown_field_facts(meta, self.shown_fields)
        return self.line_facts(meta, said, currency)

    def currency_of(self, entity: BaseEntity) -> str | None:
        return None if self.currency is None else self.currency(self.metadata_of(entity))

    def campaign_noted(self, entity: BaseEntity) -> str | None:
        """The campaign its line notes and groups by, if its kind notes one."""
        return None if self.line_campaign is None else self.line_campaign(self.metadata_of(entity))

    def is_resolved(self, entity: BaseEntity) -> bool:
        return self.resolved is not None and self.resolved(self.metadata_of(entity))


_REGISTRY: dict[str, EntityKind] = {}
_built_in_loaded = False


def register(kind: EntityKind) -> EntityKind:
    """Add a kind (a built-in one at import, a deployment's or a test's own later: after the
    built-in ones, whenever it is registered)."""
    _registry()[kind.type] = kind
    return kind


def unregister(entity_type: str) -> None:
    """Remove a kind added with `register` (a test's toy kind, when the test ends)."""
    _REGISTRY.pop(entity_type, None)


def _registry() -> dict[str, EntityKind]:
    global _built_in_loaded
    if not _built_in_loaded:
        _built_in_loaded = True  # first, so the built-in kinds' own `register` calls pass
        importlib.import_module(_BUILT_IN)
    return _REGISTRY


def kind_of(entity_type: str) -> EntityKind:
    """The kind of a type name; KeyError for an unknown one (validate with keys first)."""
    return _registry()[entity_type]


def is_kind(entity_type: object) -> bool:
    return isinstance(entity_type, str) and entity_type in _registry()


def all_kinds() -> tuple[EntityKind, ...]:
    """Every kind, in the order registered (the built-in ones in the SPEC's order)."""
    return tuple(_registry().values())


def entity_types() -> tuple[str, ...]:
    return tuple(_registry())


def link_target_type() -> str:
    """The type other kinds link to by name (the campaign)."""
    return next(k.type for k in _registry().values() if k.link_target)


def addressed_type() -> str:
    """The type a decision names as what it is meant to fix (the pain point)."""
    return next(k.type for k in _registry().values() if k.addressed)


def addresses(entity_type: str) -> bool:
    """Whether entities of the type name the pain points they are meant to fix."""
    kind = _registry().get(entity_type)
    return kind is not None and kind.addresses_pain_points


def always_injected() -> tuple[str, ...]:
    """The types every context holds whatever the task, in section order (best practice 4)."""
    return tuple(k.type for k in in_sections() if k.always_injected)


def companions() -> dict[str, int]:
    """Type -> how many of its entities a chosen campaign brings (registry order)."""
    return {k.type: k.companions for k in _registry().values() if k.companions}


def type_for_word(word: str) -> str | None:
    """The type a model's word for a kind names ("kpi", "pain"), else None."""
    for kind in _registry().values():
        if word in kind.llm_words:
            return kind.type
    return None


def asked_types(query: Sequence[str]) -> tuple[str, ...]:
    """The types a task's terms ask for by their kind's own words."""
    terms = set(query)
    return tuple(kind.type for kind in _registry().values() if kind.task_words & terms)


def in_sections() -> tuple[EntityKind, ...]:
    """Every kind in the context block's section order."""
    return tuple(sorted(_registry().values(), key=lambda k: k.section))


# --- validating by the kinds registered ---------------------------------------------------------

#: Discriminated unions (of models) and literals (of names) already built, by their members.
_ADAPTERS: dict[tuple[object, ...], TypeAdapter[Any]] = {}


def adapter_for(
    members: tuple[object, ...], built: TypeAdapter[Any] | None = None
) -> TypeAdapter[Any]:
    """The union of these models, or the literal of these names, built once (`built`: one
    already made, kept for them: the built-in kinds' published unions)."""
    if built is not None:
        _ADAPTERS[members] = built
    if members not in _ADAPTERS:
        if all(isinstance(m, str) for m in members):
            _ADAPTERS[members] = TypeAdapter(Literal[members])
        else:
            union = Annotated[Union[members], Field(discriminator="type")]  # noqa: UP007
            _ADAPTERS[members] = TypeAdapter(union)
    return _ADAPTERS[members]


class RegisteredKinds:
    """A pydantic annotation: a value validated by the kinds registered when it is validated
    (the union of each one's `model`, "input_model" or "entity_model"; with no model, their
    type names), so a kind a deployment registers at run time is accepted with the same errors
    (an unknown type is refused naming the registered ones); serialised as itself (an entity
    as its own model); published as `published` (the built-in kinds', for /openapi.json)."""

    def __init__(self, published: object, model: str | None = None) -> None:
        self.published = published
        self.model = model

    def validate(self, value: object) -> object:
        kinds = all_kinds()
        if self.model is None:
            return adapter_for(tuple(k.type for k in kinds)).validate_python(value)
        return adapter_for(tuple(getattr(k, self.model) for k in kinds)).validate_python(value)

    def __get_pydantic_core_schema__(
        self, _source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        as_itself = core_schema.wrap_serializer_function_ser_schema(
            lambda value, serialize: serialize(value), schema=core_schema.any_schema()
        )
        return core_schema.no_info_plain_validator_function(
            self.validate,
            serialization=as_itself,
            json_schema_input_schema=handler.generate_schema(self.published),
        )

    def __get_pydantic_json_schema__(
        self, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        """The published schema, for a body and for a response alike."""
        return handler(schema["json_schema_input_schema"])  # type: ignore[typeddict-item]
