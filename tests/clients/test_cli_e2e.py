"""`entity-memory` commands in subprocesses against the real local host: human output,
`--json` shapes, exit codes, how the user id is chosen, and `forget`'s confirmation."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from entity_memory_client import EntityMemory

from .conftest import run_cli

pytestmark = pytest.mark.e2e

ENTITIES = [
    {
        "type": "campaign",
        "name": "Campaign Alpha",
        "content": "Search campaign; target CPA $40",
        "importance": 0.8,
        "metadata": {"strategy": "target CPA", "budget": 150},
    },
    {
        "type": "metric",
        "name": "Alpha CPA",
        "content": "Cost per acquisition of Campaign Alpha is $42",
        "importance": 0.85,
        "metadata": {"kpi": "CPA", "value": 42, "unit": "USD", "campaign": "Campaign Alpha"},
    },
    {
        "type": "preference",
        "name": "Numbers first",
        "content": "Lead with numbers, short bullets",
        "importance": 0.9,
        "metadata": {"category": "reporting", "value": "numbers first", "confidence": 0.9},
    },
]


def _seed(user: str) -> dict[str, str]:
    with EntityMemory(user=user) as mem:
        up = mem.upsert(ENTITIES, "seed")
    return {r["type"]: r["id"] for r in up["results"]}


def _json(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_read_commands_human_and_json(env: dict[str, str], user: str) -> None:
    ids = _seed(user)
    u = ["--user", user]

    done = run_cli("context", *u, "--task", "Campaign Alpha budget", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("<entity_memory>") and "Campaign Alpha" in done.stdout
    ctx = _json(run_cli("context", *u, "--task", "alpha", "--json", "--explain", env=env))
    assert set(ctx) >= {"context", "entities", "scores"}

    done = run_cli("entities", *u, env=env)
    assert done.returncode == 0 and "Numbers first" in done.stdout
    listed = _json(run_cli("entities", *u, "--json", env=env))
    assert listed["count"] == 3 and {e["type"] for e in listed["entities"]} == {
        "campaign",
        "metric",
        "preference",
    }
    only = _json(run_cli("entities", *u, "--type", "metric", "--json", env=env))
    assert [e["id"] for e in only["entities"]] == [ids["metric"]]

    got = _json(run_cli("get", *u, "campaign", ids["campaign"], "--json", env=env))
    assert got["name"] == "Campaign Alpha" and got["metadata"]["budget"] == 150
    done = run_cli("get", *u, "campaign", ids["campaign"], env=env)
    assert "Search campaign" in done.stdout

    hist = _json(run_cli("history", *u, "campaign", ids["campaign"], "--json", env=env))
    assert hist["type"] == "campaign" and hist["versions"][0]["version"] == 1
    done = run_cli("history", *u, "campaign", ids["campaign"], env=env)
    assert "v1" in done.stdout and "created" in done.stdout

    changes = _json(run_cli("changes", *u, "--since", "0", "--json", env=env))
    assert changes["since"] == 0 and changes["count"] == 3
    done = run_cli("changes", *u, "--since", "0", env=env)
    assert "campaign/" in done.stdout

    trends = _json(run_cli("trends", *u, "--json", env=env))
    assert set(trends) == {"metrics", "painPoints"} and trends["metrics"]
    assert "metrics:" in run_cli("trends", *u, env=env).stdout

    exported = _json(run_cli("export", *u, env=env))
    assert exported["userId"] == user and len(exported["entities"]) == 3
    assert len(exported["history"]) == 3

    assert _json(run_cli("reindex", *u, "--json", env=env))["entries"] == 3

    deleted = _json(run_cli("delete", *u, "metric", ids["metric"], "--json", env=env))
    assert deleted == {"deleted": {"type": "metric", "id": ids["metric"]}}


def test_errors_exit_1_with_the_api_code(env: dict[str, str], user: str) -> None:
    done = run_cli("get", "--user", user, "campaign", "missing", "--json", env=env)
    assert done.returncode == 1
    assert json.loads(done.stderr)["error"]["code"] == "not_found"
    done = run_cli("entities", "--user", "bad user!", env=env)  # refused before any request
    assert done.returncode == 2 and "invalid user id 'bad user!'" in done.stderr
    done = run_cli("entities", "--user", user, env={**env, "ENTITY_MEMORY_TOKEN": "nope"})
    assert done.returncode == 1 and "unauthorized" in done.stderr


def test_user_id_order_flag_env_config(env: dict[str, str], user: str, em_home: Path) -> None:
    _seed(user)
    # no user anywhere: a usage error naming the three ways
    done = run_cli("entities", env=env)
    assert done.returncode == 2 and "--user" in done.stderr and "ENTITY_MEMORY_USER" in done.stderr
    # the config file
    (em_home / "config.json").write_text(json.dumps({"user": user}))
    assert _json(run_cli("entities", "--json", env=env))["count"] == 3
    # the environment beats the config file
    other = {**env, "ENTITY_MEMORY_USER": f"{user}-env"}
    assert _json(run_cli("entities", "--json", env=other))["count"] == 0
    # the flag beats both
    assert _json(run_cli("entities", "--user", user, "--json", env=other))["count"] == 3
    # ENTITY_MEMORY_CONFIG points at another file; url and token can live there too
    cfg = em_home / "other.json"
    cfg.write_text(json.dumps({"user": user, "url": env["ENTITY_MEMORY_URL"], "token": "x"}))
    bare = {k: v for k, v in env.items() if k not in ("ENTITY_MEMORY_URL", "ENTITY_MEMORY_TOKEN")}
    done = run_cli("entities", env={**bare, "ENTITY_MEMORY_CONFIG": str(cfg)})
    assert done.returncode == 1 and "unauthorized" in done.stderr


def test_forget_needs_confirmation(env: dict[str, str], user: str) -> None:
    _seed(user)
    # stdin is not a terminal (DEVNULL) and no --yes: refuse, erase nothing
    done = run_cli("forget", "--user", user, env=env)
    assert done.returncode == 2 and "--yes" in done.stderr
    done = run_cli("forget", "--user", user, input="y\n", env=env)  # a pipe is no terminal
    assert done.returncode == 2
    with EntityMemory(user=user) as mem:
        assert mem.list()["count"] == 3

    forgot = _json(run_cli("forget", "--user", user, "--yes", "--json", env=env))
    assert forgot["user"] == user and forgot["complete"] is True
    with EntityMemory(user=user) as mem:
        assert mem.list()["count"] == 0


FIXTURE = Path(__file__).parent / "fixtures" / "claude_code_session.jsonl"


def test_extract_one_file_from_stdin(env: dict[str, str], user: str) -> None:
    text = (
        "user: Campaign Gamma's CPA is $55 this week.\n"
        "assistant: Noted.\n"
        "user: I prefer weekly email summaries.\n"
    )
    w = ["--wait", "120"]
    done = run_cli("extract", "--user", user, "--session", "chat-1", "-", *w, input=text, env=env)
    assert done.returncode == 0, done.stderr
    assert "session chat-1" in done.stdout and "created" in done.stdout
    again = _json(
        run_cli(
            "extract", "--user", user, "--session", "chat-1", "-", "--json", input=text, env=env
        )
    )
    assert again["processed"] is False and again["reason"]
    assert again["session"] == "chat-1" and again["format"] == "text"


def test_extract_many_files_with_progress(env: dict[str, str], user: str, tmp_path: Path) -> None:
    messages = tmp_path / "buddy-chat.json"
    messages.write_text(
        json.dumps(
            [
                {
                    "role": "user",
                    "content": "Let's pause Campaign Delta because ROAS fell to 0.9x.",
                },
                {"role": "assistant", "content": "Pausing Campaign Delta."},
            ]
        )
    )
    plain = tmp_path / "notes.txt"
    plain.write_text("user: Campaign Echo has a CTR of 1.1% and I prefer charts over tables.\n")
    empty = tmp_path / "empty.jsonl"
    empty.write_text(json.dumps({"type": "summary", "summary": "nothing"}) + "\n")
    files = [str(FIXTURE), str(messages), str(plain), str(empty)]

    done = run_cli("extract", "--user", user, *files, "--wait", "120", env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "4/4" in done.stderr and "[" in done.stderr  # the progress bar
    assert "session 5f0c2a7e-1b2d-4c3e-9f8a-0d1e2f3a4b5c" in done.stdout  # the transcript's id
    assert "session buddy-chat" in done.stdout and "session notes" in done.stdout

    out = _json(run_cli("extract", "--user", user, *files, "--json", env=env, timeout=300))
    by_file = {Path(f["file"]).name: f for f in out["files"]}
    assert by_file[FIXTURE.name]["format"] == "claude-code"
    assert by_file["buddy-chat.json"]["format"] == "messages"
    assert by_file["notes.txt"]["format"] == "text"
    assert by_file["empty.jsonl"]["skipped"]
    for name in (FIXTURE.name, "buddy-chat.json", "notes.txt"):
        assert by_file[name]["processed"] is False  # sent before: nothing to do

    with EntityMemory(user=user) as mem:
        stored = json.dumps(mem.export()["entities"])
    assert "Campaign Alpha" in stored and "Delta" in stored and "Resultzeta" not in stored

    done = run_cli("extract", "--user", user, "--session", "x", *files, env=env)
    assert done.returncode == 2  # one --session for many files is a usage error


def test_extract_queues_a_job_that_jobs_and_doctor_show(env: dict[str, str], user: str) -> None:
    text = "user: Campaign Kilo runs on a $45/day budget.\n"
    queued = _json(run_cli("extract", "--user", user, "-", "--json", input=text, env=env))
    assert "statusUrl" in queued and queued["job"]["state"] in ("queued", "running", "done")
    job_id = queued["job"]["id"]
    with EntityMemory(user=user) as mem:
        for _ in range(600):  # the host runs it off the request: ask until it says done
            if mem.job(job_id)["state"] == "done":
                break
            time.sleep(0.2)
    shown = run_cli("job", "--user", user, job_id, env=env)
    assert shown.returncode == 0, shown.stderr
    assert job_id in shown.stdout and "done" in shown.stdout and "created" in shown.stdout
    listed = run_cli("jobs", "--user", user, env=env)
    assert job_id in listed.stdout
    doctor = run_cli("doctor", "--user", user, env=env)
    assert "extraction jobs: 1 done" in doctor.stdout, doctor.stdout


def test_context_positional_explain_search_and_add(env: dict[str, str], user: str) -> None:
    _seed(user)
    u = ["--user", user]
    done = run_cli("context", *u, "Campaign", "Alpha", "budget", "--explain", env=env)
    assert done.returncode == 0, done.stderr
    assert "<entity_memory>" in done.stdout and "ranking" in done.stdout
    assert "relevance" in done.stdout  # the signals, in text output too

    added = run_cli(
        "add",
        *u,
        "decision",
        "Raise Alpha budget",
        "--content",
        "Alpha budget to $200",
        "--metadata",
        '{"action": "raise budget", "rationale": "CPA under target"}',
        "--source",
        "let's raise Alpha to $200",
        env=env,
    )
    assert added.returncode == 0, added.stderr
    assert "decision/" in added.stdout
    found = run_cli("search", *u, "raise", "alpha", "budget", env=env)
    assert found.returncode == 0 and "Raise Alpha budget" in found.stdout
    bad = run_cli("add", *u, "decision", "X", "--metadata", "{not json", env=env)
    assert bad.returncode == 2 and "--metadata" in bad.stderr


def test_a_closed_pipe_is_not_an_error(env: dict[str, str], user: str) -> None:
    """`entity-memory context ... | head -c1`: the reader is gone before the CLI writes. The
    read end is closed before the CLI starts, so the write fails every time, not by timing."""
    _seed(user)
    cmd = [sys.executable, "-m", "entity_memory_client.cli", "context", "--user", user, "alpha"]
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        writer = subprocess.run(
            cmd,
            stdout=write_end,
            stderr=subprocess.PIPE,
            env={**env, "PYTHONPATH": env["PYTHONPATH"]},
            timeout=60,
            text=True,
        )
    finally:
        os.close(write_end)
    assert writer.returncode == 0, writer.stderr
    assert "Traceback" not in writer.stderr and "BrokenPipe" not in writer.stderr


def test_stdin_without_session_gets_a_stable_session(env: dict[str, str], user: str) -> None:
    text = "user: Campaign Zulu budget is $80/day.\nassistant: Noted.\n"
    first = _json(run_cli("extract", "--user", user, "-", "--json", input=text, env=env))
    again = _json(run_cli("extract", "--user", user, "-", "--json", input=text, env=env))
    assert first["session"] == again["session"] and first["session"].startswith("stdin-")
    assert again["job"]["id"] == first["job"]["id"] and again["job"]["resent"] is True
    other = _json(
        run_cli("extract", "--user", user, "-", "--json", input=text + "user: hi\n", env=env)
    )
    assert other["session"] != first["session"]


def test_init_and_doctor(env: dict[str, str], user: str, em_home: Path, tmp_path: Path) -> None:
    bare = {k: v for k, v in env.items() if k not in ("ENTITY_MEMORY_URL", "ENTITY_MEMORY_TOKEN")}
    done = run_cli(
        "init",
        "--url",
        env["ENTITY_MEMORY_URL"],
        "--token",
        env["ENTITY_MEMORY_TOKEN"],
        "--user",
        user,
        env=bare,
    )
    assert done.returncode == 0, done.stderr
    config = em_home / "config.json"
    assert json.loads(config.read_text())["user"] == user
    assert config.stat().st_mode & 0o077 == 0

    healthy = run_cli("doctor", "--dir", str(tmp_path), env=bare)
    assert healthy.returncode == 0, healthy.stdout
    assert "token is accepted" in healthy.stdout and "no Claude Code hooks" in healthy.stdout

    wrong = run_cli("doctor", "--token", "emu_wrong", env=bare)
    assert wrong.returncode == 1 and "token is missing, wrong or revoked" in wrong.stdout

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    down = run_cli("doctor", "--url", dead, env=bare)
    assert down.returncode == 1 and "does not answer" in down.stdout
