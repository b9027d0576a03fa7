"""`scripts/deploy --check`: each piece a first deploy lacks is reported, with its fix."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "scripts" / "deploy"

INCOMPLETE = """
name = "entity-memory-deploy-check-test"
main = "entry.py"
compatibility_date = "2026-09-08"

[[kv_namespaces]]
binding = "ENTITIES"
id = "00000000000000000000000000000000"

[[d1_databases]]
binding = "HISTORY"
database_name = "entity-memory-history"
database_id = "00000000-0000-0000-0000-000000000000"

[[durable_objects.bindings]]
name = "USER_WRITER"
class_name = "UserWriter"

[[durable_objects.bindings]]
name = "GHOST"
class_name = "Ghost"

[[migrations]]
tag = "v1"
new_sqlite_classes = ["Ghost"]
"""

COMPLETE = """
name = "entity-memory-deploy-check-test"
main = "entry.py"
compatibility_date = "2026-09-08"

[[kv_namespaces]]
binding = "ENTITIES"
id = "3f2c9a0b1d4e4f6a8b7c6d5e4f3a2b1c"

[[d1_databases]]
binding = "HISTORY"
database_name = "entity-memory-history"
database_id = "5b1e7c2a-9d3f-4e8b-a6c0-1f2e3d4c5b6a"

[[durable_objects.bindings]]
name = "USER_WRITER"
class_name = "UserWriter"

[[migrations]]
tag = "v1"
new_sqlite_classes = ["UserWriter"]
"""

ENTRY = "from workers import DurableObject\n\n\nclass UserWriter(DurableObject):\n    pass\n"


def check(tmp_path: Path, config: str, *flags: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "wrangler.toml").write_text(config)
    (tmp_path / "entry.py").write_text(ENTRY)
    config_path = tmp_path / "wrangler.toml"
    return subprocess.run(
        [sys.executable, str(DEPLOY), "--check", "--config", str(config_path), *flags],
        capture_output=True,
        text=True,
        timeout=180,
    )


def missing_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if "MISSING" in line]


def test_each_missing_piece_is_reported_with_its_fix(tmp_path: Path) -> None:
    done = check(tmp_path, INCOMPLETE, "--offline")
    assert done.returncode == 1, done.stdout + done.stderr
    missing = "\n".join(missing_lines(done.stdout))
    assert "KV namespace ENTITIES" in missing and "wrangler kv namespace create" in missing
    assert "D1 database HISTORY" in missing and "wrangler d1 create" in missing
    assert "USER_WRITER: no [[migrations]] entry creates class UserWriter" in missing
    assert "GHOST: class Ghost is not defined" in missing
    assert "UserWriter is not defined" not in missing


def test_the_remote_checks_say_what_they_could_not_check(tmp_path: Path) -> None:
    """Without Cloudflare (CI, offline): migrations and secrets are missing, with the reason."""
    done = check(tmp_path, INCOMPLETE)
    assert done.returncode == 1
    missing = missing_lines(done.stdout)
    assert any("HISTORY migrations: not checked until the database_id is set" in m for m in missing)
    [secrets] = [m for m in missing if "API_TOKEN" in m]
    # Offline or logged out: "cannot reach"; with a login, the test Worker has no such secret.
    assert "cannot reach Cloudflare" in secrets or "not set" in secrets


def test_a_complete_config_passes_the_offline_checks(tmp_path: Path) -> None:
    done = check(tmp_path, COMPLETE, "--offline")
    assert missing_lines(done.stdout) == [] or all(
        "scripts/setup" in m for m in missing_lines(done.stdout)
    ), done.stdout
    assert "migration for UserWriter present" in done.stdout
