"""One file per scenario in the shape ../shared/eval/capable-model/JUDGE.md reads.

`{"sessions": [{session_id, date, messages}], "gold_final": expect_final, "stored": [...]}`,
where `stored` holds what a reader needs to judge each entity (type, name, aliases, content,
metadata, version) and nothing that tells which memory system wrote it: provenance (it names
the extractor), ids and timestamps are left out, so the lead can hand two memories of one
scenario to a judge under neutral labels. The file is named after the scenario only.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: The fields of a stored entity a judge reads (JUDGE.md: "typed entities with name, content,
#: metadata, aliases, version").
JUDGED_FIELDS = ("type", "name", "aliases", "content", "metadata", "version")


def judge_document(scenario: dict[str, Any], stored: list[dict[str, Any]]) -> dict[str, Any]:
    sessions = [
        {"session_id": s["session_id"], "date": s["date"], "messages": s["messages"]}
        for s in scenario["sessions"]
    ]
    entities = sorted(
        ({k: e[k] for k in JUDGED_FIELDS if k in e} for e in stored),
        key=lambda e: (e.get("type", ""), str(e.get("name", "")).lower()),
    )
    return {"sessions": sessions, "gold_final": scenario["expect_final"], "stored": entities}


def write_judge_file(folder: Path, scenario: dict[str, Any], stored: list[dict[str, Any]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{scenario['scenario']}.json"
    path.write_text(json.dumps(judge_document(scenario, stored), ensure_ascii=False, indent=1))
    return path
