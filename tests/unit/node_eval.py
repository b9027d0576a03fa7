"""Evaluate a JavaScript expression against one of the host's modules under node, for the
unit tests of local/*.mjs: the module is imported as `alias`, the expression's value comes
back through JSON."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def node_eval(module: str, alias: str, expression: str) -> Any:
    script = (
        f"import * as {alias} from {json.dumps(str(REPO / 'local' / module))};"
        f"process.stdout.write(JSON.stringify({expression}));"
    )
    done = subprocess.run(
        ["node", "--input-type=module", "-e", script],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return json.loads(done.stdout)
