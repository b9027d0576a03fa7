"""Evaluate a JavaScript expression against one of the host's modules under node, for the
unit tests of local/*.mjs: the module is imported as `alias`, the expression's value comes
back through JSON."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def run_node(
    module: str,
    alias: str,
    script: str,
    env: Mapping[str, str] | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """`script` after `import * as <alias> from local/<module>`; `env` over this process's."""
    head = f"import * as {alias} from {json.dumps(str(REPO / 'local' / module))};"
    return subprocess.run(
        ["node", "--input-type=module", "-e", head + script],
        capture_output=True,
        text=True,
        check=check,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def node_eval(
    module: str, alias: str, expression: str, env: Mapping[str, str] | None = None
) -> Any:
    done = run_node(module, alias, f"process.stdout.write(JSON.stringify({expression}));", env)
    return json.loads(done.stdout)
