"""The local host's cron (local/cron.mjs) reads wrangler.toml's schedule as Cloudflare does
(five fields, UTC) and fires scheduled() on it; `--cron-every` replaces it. Run under node."""

from __future__ import annotations

import json
import tomllib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.unit.node_eval import node_eval, run_node

REPO = Path(__file__).resolve().parents[2]


def _node(expression: str) -> Any:
    return node_eval("cron.mjs", "cron", expression)


def _ms(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


def _next(crons: list[str], after: str) -> str:
    at = _node(f"cron.nextFire({json.dumps(crons)}.map(cron.parseCron), {_ms(after)})?.at ?? null")
    return datetime.fromtimestamp(at / 1000, UTC).strftime("%Y-%m-%dT%H:%M")


def test_the_next_fire_of_wrangler_toml_schedules() -> None:
    assert _next(["*/30 * * * *"], "2026-03-01T10:07:00") == "2026-03-01T10:30"
    assert _next(["*/30 * * * *"], "2026-03-01T10:30:00") == "2026-03-01T11:00"
    assert _next(["0 3 * * *"], "2026-03-01T04:00:00") == "2026-03-02T03:00"
    # Named days and months; Sunday is 0 and 7.
    assert _next(["15 9 * * MON"], "2026-03-01T00:00:00") == "2026-03-02T09:15"  # a Monday
    assert _next(["0 0 * * 7"], "2026-03-02T00:00:00") == "2026-03-08T00:00"
    assert _next(["0 12 1 JAN *"], "2026-03-01T00:00:00") == "2027-01-01T12:00"
    # Lists and ranges with steps; the earliest of several crons.
    assert _next(["5,50 8-10/2 * * *"], "2026-03-01T08:06:00") == "2026-03-01T08:50"
    assert _next(["0 23 * * *", "45 22 * * *"], "2026-03-01T12:00:00") == "2026-03-01T22:45"
    # Both day fields restricted: either matches (cron's rule).
    assert _next(["0 0 13 * FRI"], "2026-03-01T00:00:00") == "2026-03-06T00:00"


def test_what_the_timer_cannot_read_is_left_out_with_the_reason() -> None:
    plan = _node('cron.cronPlan(["*/30 * * * *", "0 0 L * *", "61 * * * *"], undefined)')
    assert len(plan["crons"]) == 1
    assert [why.split(":")[0] for why in plan["skipped"]] == ["0 0 L * *", "61 * * * *"]


def test_cron_every_replaces_the_schedule_and_zero_turns_it_off() -> None:
    assert _node('cron.cronPlan(["*/30 * * * *"], "2")')["everyMs"] == 2000
    assert _node('cron.describePlan(cron.cronPlan(["*/30 * * * *"], "0"))').startswith("off")
    # The project's own schedule is one the timer reads.
    crons = tomllib.loads((REPO / "wrangler.toml").read_text())["triggers"]["crons"]
    plan = _node(f"cron.cronPlan({json.dumps(crons)}, undefined)")
    assert len(plan["crons"]) == len(crons) and plan["skipped"] == []


def test_a_bad_period_is_refused() -> None:
    done = run_node("cron.mjs", "cron", 'cron.cronPlan([], "soon")', check=False)
    assert done.returncode != 0 and "--cron-every takes seconds" in done.stderr
