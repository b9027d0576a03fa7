"""The shape of the code, checked: small modules, short functions, layers that import only
downward. Parsed with `ast`, so a violation names its file and line."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = SRC / "entity_memory"
MAX_MODULE_LINES = 450
MAX_FUNCTION_LINES = 60
#: Layers that must not import `entity_memory.service` (nor anything above it).
LOWER_LAYERS = ("domain", "storage", "extraction", "embeddings")
UPPER = ("entity_memory.service", "entity_memory.http", "entity_memory.web", "adapters", "entry")


def _modules() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py") if "__pycache__" not in p.parts)


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def test_no_module_is_over_450_lines() -> None:
    long = [
        f"{p.relative_to(SRC)}: {n}"
        for p in _modules()
        if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES
    ]
    assert long == []


def test_no_function_is_over_60_lines() -> None:
    long = []
    for path in _modules():
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                start = min([node.lineno] + [d.lineno for d in node.decorator_list])
                length = (node.end_lineno or node.lineno) - start + 1
                if length > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(SRC)}:{node.lineno} {node.name}: {length}")
    assert long == []


def _imports(tree: ast.Module) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return found


def test_lower_layers_never_import_service_or_above() -> None:
    upward = []
    for layer in LOWER_LAYERS:
        for path in sorted((PACKAGE / layer).rglob("*.py")):
            for line, module in _imports(_tree(path)):
                if module.startswith(UPPER):
                    upward.append(f"{path.relative_to(SRC)}:{line} imports {module}")
    assert upward == []


def test_the_settings_module_imports_nothing_of_the_package() -> None:
    imported = [m for _, m in _imports(_tree(PACKAGE / "settings.py"))]
    assert [m for m in imported if m.startswith("entity_memory")] == []


def test_the_core_never_imports_the_platform() -> None:
    platform = ("js", "pyodide", "workers", "asgi")
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for line, module in _imports(_tree(path)):
            if module.split(".")[0] in platform:
                found.append(f"{path.relative_to(SRC)}:{line} imports {module}")
    assert found == []


def test_the_code_asks_the_kind_instead_of_spelling_types_out() -> None:
    """Outside each kind's own module (domain/kinds/), no file of the package (Python or the
    inspector's JavaScript) names a type with a literal, keeps a per-type table or compares a
    type with a literal: it asks the kind (issue 35). A field or a word spelled like a type
    is not a type literal (bench/type_literals.py says how they are told apart); the figures:
    `python -m bench.type_literals --list`."""
    from bench.type_literals import count

    figures = count(PACKAGE)
    assert figures == {"literals": {}, "tables": {}, "checks": {}}
