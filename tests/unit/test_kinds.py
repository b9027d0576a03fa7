"""The entity kinds (domain/kind.py, domain/kinds/): one object per type, in the registry."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass

from entity_memory.domain.kind import all_kinds, entity_types, in_sections, is_kind, kind_of


@dataclass
class _Detection:
    severity: str = "medium"
    target: float | None = None
    accepted: bool = False


def test_the_five_kinds_are_registered_in_the_spec_order() -> None:
    assert entity_types() == ("campaign", "metric", "decision", "pain_point", "preference")
    assert [k.type for k in in_sections()] == [
        "preference",
        "pain_point",
        "decision",
        "campaign",
        "metric",
    ]
    assert is_kind("metric") and not is_kind("audience") and not is_kind(None)


def test_each_kind_models_its_own_type() -> None:
    for kind in all_kinds():
        assert kind.entity_model.model_fields["type"].default == kind.type
        assert kind.input_model.model_fields["metadata"].annotation is not None


def test_rules_importance_bands_keep_the_detectors_figures() -> None:
    pain = kind_of("pain_point").importance
    assert pain.of_detection(_Detection(severity="high")) == 0.9
    assert pain.of_detection(_Detection()) == 0.7
    metric = kind_of("metric").importance
    assert metric.of_detection(_Detection(target=30.0)) == 0.8
    assert metric.of_detection(_Detection()) == 0.7
    decision = kind_of("decision").importance
    assert decision.of_detection(_Detection(accepted=True)) == 0.85
    assert decision.of_detection(_Detection()) == 0.9


def test_llm_importance_is_one_figure_per_kind() -> None:
    figures = {k.type: k.importance.extracted for k in all_kinds()}
    assert figures == {
        "campaign": 0.7,
        "metric": 0.8,
        "decision": 0.9,
        "pain_point": 0.8,
        "preference": 0.9,
    }


def test_a_kind_registered_before_any_lookup_comes_after_the_built_in_ones() -> None:
    """A deployment may register its kind before anything read the registry (a fresh
    interpreter): the built-in kinds are loaded first, never skipped."""
    code = (
        "import entity_memory.domain.kind as k\n"
        "from entity_memory.domain.models import BaseEntity\n"
        "k.register(k.EntityKind(type='toy', entity_model=BaseEntity, input_model=BaseEntity,"
        " metadata_model=BaseEntity, importance=k.ImportanceBands(0.5, 0.5), label='Toys',"
        " section=9))\n"
        "print(','.join(k.entity_types()))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "campaign,metric,decision,pain_point,preference,toy"
