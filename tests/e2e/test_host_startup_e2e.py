"""The local host's start-up output: wrangler's and workerd's warnings that the Durable Object
(USER_WRITER) "will not work in local development" / "no such Durable Object class" are false
here (the host runs the object itself), so each is replaced by one line that says so, and
writes through the object work."""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx
import pytest

from .hostproc import REPO, Host, pending_migrations

pytestmark = pytest.mark.e2e


def test_false_durable_object_warnings_are_one_true_line(host: Host) -> None:
    with httpx.Client(base_url=host.base_url, timeout=60) as c:
        r = c.put(
            "/v1/users/startup/entities",
            json={"session_id": "s1", "entities": [{"type": "campaign", "name": "Alpha"}]},
        )
    assert r.status_code == 200, r.text
    stderr = (host.persist_dir.parent / "host.stderr").read_text()
    assert "will not work in local development" not in stderr
    assert "no such Durable Object class is exported" not in stderr
    assert "AI bindings always access remote resources" not in stderr
    assert stderr.count("USER_WRITER (UserWriter) runs in this host") == 1
    notes = [line for line in stderr.splitlines() if line.startswith("local host: ")]
    assert len(notes) == 2, stderr  # the Durable Object note and the AI note, each on its line
    assert not any(line and not line.strip() for line in stderr.splitlines()), "filler lines"


def test_serve_shows_the_migrations_table_once(tmp_path: Path) -> None:
    """Wrangler prints its table again after each migration it applies (five tables for five
    migrations); `scripts/serve` shows the last one, every migration's final status."""
    done = subprocess.run(
        ["bash", "scripts/serve", "--no-llm", "--migrate-only", "--persist", str(tmp_path / "v3")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("┌") == 1, done.stderr
    migrations = sorted(p.name for p in (REPO / "migrations").glob("*.sql"))
    table = done.stderr[done.stderr.index("┌") :]
    assert all(name in table for name in migrations), table
    assert pending_migrations(tmp_path / "v3") == []


def test_serve_migrates_a_state_folder_of_any_name(tmp_path: Path) -> None:
    """Wrangler writes D1 to `<--persist-to>/v3`; a `--persist` folder named otherwise still
    gets its migrations where the host reads, not in a sibling `v3`."""
    state = tmp_path / "my-state"
    done = subprocess.run(
        ["bash", "scripts/serve", "--no-llm", "--migrate-only", "--persist", str(state)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert pending_migrations(state) == []
    assert not (tmp_path / "v3").exists()
