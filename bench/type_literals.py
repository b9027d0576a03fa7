"""Figures: where the code still spells an entity type out (issue 35).

Counts, in `src/` outside `domain/kinds/` (each kind's own module) and outside the tests:
files naming a type as a string literal (Python string constants, found with `ast`, and
quoted words in the inspector's JavaScript), per type and in all; per-type tables (dict
literals keyed by two or more type names); and comparisons with a type literal
(`type == "metric"`, `kind in ("campaign", ...)`).

A constant spelled like a type is told from a field name or a word by where it stands, and
not counted when it is: a subscript (`meta["campaign"]`), the key read by `.get`, `.pop` or
`.setdefault`, a key of a dict literal whose keys are not all type names (a record's field,
`{"kpi": ..., "campaign": ...}`), or a member of a collection literal holding a string that is
no type name (a word list, `{"the", "campaign", "avg"}`). Everywhere else (a comparison, a
table's key, a `Literal[...]`, a `"type": "metric"` value, an argument) it names the type.

Run: `.venv/bin/python -m bench.type_literals [SRC] [--list]`
"""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

TYPES = ("campaign", "metric", "decision", "pain_point", "preference")
_JS_LITERAL = re.compile(r"""["'`](campaign|metric|decision|pain_point|preference)["'`]""")
ROOT = Path(__file__).resolve().parent.parent


def _names_type(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in TYPES
    if isinstance(node, ast.Tuple | ast.Set | ast.List):
        return any(_names_type(e) for e in node.elts)
    return False


_READS = frozenset({"get", "pop", "setdefault"})


def _is_word(node: ast.Constant, parent: ast.AST | None) -> bool:
    """Whether a constant spelled like a type is a field name or a word (module docstring)."""
    if isinstance(parent, ast.Subscript) and parent.slice is node:
        return not (isinstance(parent.value, ast.Name) and parent.value.id == "Literal")
    if isinstance(parent, ast.Call) and parent.args[:1] == [node]:
        return isinstance(parent.func, ast.Attribute) and parent.func.attr in _READS
    if isinstance(parent, ast.Dict) and node in parent.keys:
        return not all(isinstance(k, ast.Constant) and k.value in TYPES for k in parent.keys)
    if isinstance(parent, ast.Tuple | ast.Set | ast.List):
        return any(
            isinstance(e, ast.Constant) and isinstance(e.value, str) and e.value not in TYPES
            for e in parent.elts
        )
    return False


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def count(src: Path) -> dict[str, dict[str, int]]:
    """{"literals": file -> count, "tables": file -> count, "checks": file -> count}."""
    out: dict[str, dict[str, int]] = {"literals": {}, "tables": {}, "checks": {}}
    for path in sorted(src.rglob("*")):
        rel = str(path.relative_to(src))
        if "domain/kinds/" in rel or "__pycache__" in rel:
            continue
        if path.suffix == ".js":
            found = len(_JS_LITERAL.findall(path.read_text()))
            if found:
                out["literals"][rel] = found
            continue
        if path.suffix != ".py":
            continue
        tree = ast.parse(path.read_text())
        parents = _parents(tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and node.value in TYPES
                and not _is_word(node, parents.get(node))
            ):
                out["literals"][rel] = out["literals"].get(rel, 0) + 1
            if isinstance(node, ast.Dict):
                keys = [k for k in node.keys if isinstance(k, ast.Constant) and k.value in TYPES]
                if len(keys) >= 2:
                    out["tables"][rel] = out["tables"].get(rel, 0) + 1
            if isinstance(node, ast.Compare) and any(
                _names_type(part) for part in (node.left, *node.comparators)
            ):
                out["checks"][rel] = out["checks"].get(rel, 0) + 1
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("src", nargs="?", default=str(ROOT / "src"))
    parser.add_argument("--list", action="store_true", help="name the files")
    args = parser.parse_args()
    figures = count(Path(args.src))
    for what, files in figures.items():
        print(f"{what}: {sum(files.values())} in {len(files)} files")
        if args.list:
            for rel, n in files.items():
                print(f"  {n:3d} {rel}")


if __name__ == "__main__":
    main()
