"""The rules extractor's seams: every detector has the one `Detector` shape, and every cue a
detector reads comes from the lexicon (so a new type is a detector module, a new language a
lexicon package)."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

from entity_memory.domain.kinds import BUILT_IN
from entity_memory.extraction import rules
from entity_memory.extraction.rules import extractor
from entity_memory.extraction.rules.detector import Detector

RULES = Path(rules.__file__).parent
PROTOCOL_METHODS = (
    "in_sentence",
    "in_conversation",
    "conversation_steps",
    "merge",
    "summary",
    "metadata",
    "other_names",
    "stored_name",
    "candidate_content",
    "source",
)
#: The `re` functions that compile a pattern (the module-level `re.X(...)` call sites).
COMPILING = {"compile", "search", "match", "fullmatch", "sub", "subn", "split", "findall"}


def _detectors() -> dict[str, object]:
    """Every module-level DETECTOR of the rules package, by module."""
    found = {}
    for info in pkgutil.iter_modules([str(RULES)]):
        module = importlib.import_module(f"{rules.__name__}.{info.name}")
        if hasattr(module, "DETECTOR"):
            found[info.name] = module.DETECTOR
    return found


def test_every_detector_implements_the_protocol() -> None:
    detectors = _detectors()
    assert detectors, "no detector found"
    for module, detector in detectors.items():
        assert isinstance(detector, Detector), module
        for name in PROTOCOL_METHODS:
            want = inspect.signature(getattr(Detector, name))
            have = inspect.signature(getattr(detector, name))
            # A bound method drops `self`: the protocol's parameters after it, one for one.
            assert len(have.parameters) == len(want.parameters) - 1, (module, name)


def test_the_extractor_runs_every_detector_one_per_type() -> None:
    detectors = _detectors()
    assert set(map(id, extractor.DETECTORS)) == set(map(id, detectors.values()))
    kinds = [d.kind for d in extractor.DETECTORS]
    assert sorted(k.type for k in kinds) == sorted(k.type for k in BUILT_IN)


def test_no_pattern_is_compiled_outside_the_lexicon() -> None:
    sites = []
    for path in RULES.rglob("*.py"):
        if "lexicon" in path.relative_to(RULES).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "re"
                and node.func.attr in COMPILING
            ):
                sites.append(f"{path.name}:{node.lineno}")
    assert sites == []


def test_detectors_read_the_lexicon_package_not_a_language() -> None:
    """Only the lexicon package chooses the language: a detector never imports `en` itself."""
    imports = []
    for path in RULES.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and ".lexicon.en" in (node.module or ""):
                imports.append(f"{path.name}:{node.lineno}")
    assert imports == []


def test_the_extractor_names_no_kind() -> None:
    """How a fact becomes a candidate is its detector's to say (issue 35): the extractor
    imports no kind, so it cannot branch on one."""
    tree = ast.parse(Path(extractor.__file__).read_text())
    kinds = [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and (node.module or "").startswith("entity_memory.domain.kinds")
    ]
    assert kinds == []
