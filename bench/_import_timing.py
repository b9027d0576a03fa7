"""Where `import entry` spends its time, per module (bench/startup.mjs --imports).

A finder first on sys.meta_path wraps each module's `exec_module` and records the time spent
running that module's own body, without the modules it imports (as `python -X importtime`,
which Pyodide cannot be started with).
"""

from __future__ import annotations

import sys
import time
from importlib.machinery import ModuleSpec
from types import ModuleType


class ImportTiming:
    def __init__(self) -> None:
        self.self_ms: dict[str, float] = {}
        self._children: list[float] = []

    def find_spec(self, name: str, path: object = None, target: object = None) -> ModuleSpec | None:
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is not None and hasattr(loader, "exec_module"):
            run = loader.exec_module

            def exec_module(module: ModuleType) -> None:
                started = time.perf_counter()
                self._children.append(0.0)
                try:
                    run(module)
                finally:
                    children = self._children.pop()
                    total = time.perf_counter() - started
                    self.self_ms[name] = (total - children) * 1000
                    if self._children:
                        self._children[-1] += total

            loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec

    def by_area(self, depth: int = 3) -> dict[str, float]:
        """Self time summed per package prefix (`entity_memory.http.routers`, `pydantic`)."""
        areas: dict[str, float] = {}
        for name, ms in self.self_ms.items():
            parts = name.split(".")
            key = ".".join(parts[:depth] if parts[0] == "entity_memory" else parts[:1])
            areas[key] = areas.get(key, 0.0) + ms
        return dict(sorted(areas.items(), key=lambda kv: -kv[1]))


def install() -> ImportTiming:
    timing = ImportTiming()
    sys.meta_path.insert(0, timing)
    return timing
