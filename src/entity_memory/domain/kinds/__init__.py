"""The built-in entity kinds, one module each, registered in the SPEC's order.

Importing this package registers them (domain/kind.py imports it the first time the registry
is read). A new kind is a new module here and one line below; a deployment or a test may
instead `register` its own kind at run time.
"""

from __future__ import annotations

from entity_memory.domain.kind import register
from entity_memory.domain.kinds.campaign import CAMPAIGN
from entity_memory.domain.kinds.decision import DECISION
from entity_memory.domain.kinds.metric import METRIC
from entity_memory.domain.kinds.pain_point import PAIN_POINT
from entity_memory.domain.kinds.preference import PREFERENCE

BUILT_IN = (CAMPAIGN, METRIC, DECISION, PAIN_POINT, PREFERENCE)
for _kind in BUILT_IN:
    register(_kind)

__all__ = ["BUILT_IN", "CAMPAIGN", "DECISION", "METRIC", "PAIN_POINT", "PREFERENCE"]
