"""The built-in entity kinds, one module each, registered in the SPEC's order.

Importing this package registers them (domain/kind.py imports it the first time the registry
is read). A new kind is a new module here and one line below; a deployment or a test may
instead `register` its own kind at run time (it is then stored, ranked, merged and rendered;
the API's published schema lists the built-in kinds).

The unions below are what the API validates and documents: a discriminated union of the
built-in kinds' input and stored models.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, TypeAdapter

from entity_memory.domain.kind import register
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

BUILT_IN = (CAMPAIGN, METRIC, DECISION, PAIN_POINT, PREFERENCE)
for _kind in BUILT_IN:
    register(_kind)

#: The built-in kinds' names, for the API's schema (an enum clients can read).
EntityType = Literal[tuple(k.type for k in BUILT_IN)]  # type: ignore[valid-type]

#: The kinds an entity chosen for a context may have come with (`linkedType`): the kind others
#: link to by name, and the kind a decision addresses.
LinkedType = Literal[tuple(k.type for k in BUILT_IN if k.link_target or k.addressed)]  # type: ignore[valid-type]

EntityInput = Annotated[
    CampaignInput | MetricInput | DecisionInput | PainPointInput | PreferenceInput,
    Field(discriminator="type"),
]
entity_input_adapter: TypeAdapter[EntityInput] = TypeAdapter(EntityInput)

Entity = Annotated[
    CampaignEntity | MetricEntity | DecisionEntity | PainPointEntity | PreferenceEntity,
    Field(discriminator="type"),
]
entity_adapter: TypeAdapter[Entity] = TypeAdapter(Entity)

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
    "entity_adapter",
    "entity_input_adapter",
]
