"""The built-in entity kinds, one module each, registered in the SPEC's order.

Importing this package registers them (domain/kind.py imports it the first time the registry
is read). A new kind is a new module here and one line below; a deployment or a test may
instead `register` its own kind at run time (it is then stored, ranked, merged, rendered and
accepted by the API).

`EntityInput` and `Entity` are the discriminated unions of the built-in kinds' input and
stored models, `EntityType` their names: what the API's schema publishes. `RegisteredInput`,
`RegisteredEntity` and `RegisteredType` are what bodies, responses and writer calls are
validated by: the same union (or literal) of every kind registered when the value is validated
(the same errors: an unknown type is refused as an unknown tag naming the registered ones),
published as the built-in one.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, TypeAdapter

from entity_memory.domain.kind import RegisteredKinds, adapter_for, register
from entity_memory.domain.kinds.campaign import (
    CAMPAIGN,
    CampaignEntity,
    CampaignInput,
    CampaignMetadata,
)
from entity_memory.domain.kinds.decision import (
    DECISION,
    DecisionEntity,
    DecisionInput,
    DecisionMetadata,
)
from entity_memory.domain.kinds.metric import (
    METRIC,
    MetricEntity,
    MetricInput,
    MetricMetadata,
    MetricMetadataInput,
    MetricObservation,
    MetricObservationInput,
)
from entity_memory.domain.kinds.pain_point import (
    PAIN_POINT,
    PainPointEntity,
    PainPointInput,
    PainPointMetadata,
)
from entity_memory.domain.kinds.preference import (
    PREFERENCE,
    PreferenceCategory,
    PreferenceEntity,
    PreferenceInput,
    PreferenceMetadata,
)
from entity_memory.domain.models import EntityInputBase

BUILT_IN = (CAMPAIGN, METRIC, DECISION, PAIN_POINT, PREFERENCE)
for _kind in BUILT_IN:
    register(_kind)

#: The built-in kinds' names, for the API's schema (an enum clients can read).
EntityType = Literal[tuple(k.type for k in BUILT_IN)]  # type: ignore[valid-type]

#: The kinds an entity chosen for a context may have come with (`linkedType`): the kind others
#: link to by name, and the kind a decision addresses.
LinkedType = Literal[tuple(k.type for k in BUILT_IN if k.link_target or k.addressed)]  # type: ignore[valid-type]

_Inputs = CampaignInput | MetricInput | DecisionInput | PainPointInput | PreferenceInput
EntityInput = Annotated[_Inputs, Field(discriminator="type")]
entity_input_adapter: TypeAdapter[EntityInput] = TypeAdapter(EntityInput)

_Entities = CampaignEntity | MetricEntity | DecisionEntity | PainPointEntity | PreferenceEntity
Entity = Annotated[_Entities, Field(discriminator="type")]
entity_adapter: TypeAdapter[Entity] = TypeAdapter(Entity)

# The built-in kinds' unions, for validating while only they are registered (one schema built).
adapter_for(tuple(k.input_model for k in BUILT_IN), entity_input_adapter)
adapter_for(tuple(k.entity_model for k in BUILT_IN), entity_adapter)

#: An entity as a client sends it, of any registered kind (published as `EntityInput`: the
#: annotated type is the published union's, which FastAPI reads for the schema's components).
RegisteredInput = Annotated[_Inputs, RegisteredKinds(EntityInput, "input_model")]
#: A stored entity of any registered kind (published as `Entity`).
RegisteredEntity = Annotated[_Entities, RegisteredKinds(Entity, "entity_model")]
#: The name of any registered kind (published as `EntityType`).
RegisteredType = Annotated[str, RegisteredKinds(EntityType)]
#: Validates one input by every registered kind's model.
registered_input_adapter: TypeAdapter[EntityInputBase] = TypeAdapter(RegisteredInput)

__all__ = [
    "BUILT_IN",
    "CAMPAIGN",
    "DECISION",
    "METRIC",
    "PAIN_POINT",
    "PREFERENCE",
    "CampaignEntity",
    "CampaignInput",
    "CampaignMetadata",
    "DecisionEntity",
    "DecisionInput",
    "DecisionMetadata",
    "Entity",
    "EntityInput",
    "EntityType",
    "LinkedType",
    "MetricEntity",
    "MetricInput",
    "MetricMetadata",
    "MetricMetadataInput",
    "MetricObservation",
    "MetricObservationInput",
    "PainPointEntity",
    "PainPointInput",
    "PainPointMetadata",
    "PreferenceCategory",
    "PreferenceEntity",
    "PreferenceInput",
    "PreferenceMetadata",
    "RegisteredEntity",
    "RegisteredInput",
    "RegisteredType",
    "entity_adapter",
    "entity_input_adapter",
    "registered_input_adapter",
]
