"""The CLI as a new user meets it, with no service behind it (a stub answers where one is
needed): installed on the PATH by the documented `pip install ./clients/python` in a fresh
venv; --url/--token/--user before or after the subcommand; a bad id named as one; `doctor`
with and without a token saying what is true; `install claude-code` keeping a token out of git.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from entity_memory_client.cli import hoist_global_options

from .conftest import REPO, run_cli

COMMANDS = {"context", "get", "install", "doctor"}


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--user", "ann", "context", "x"], ["context", "--user", "ann", "x"]),
        (["--user=ann", "--json", "get", "a", "b"], ["get", "--user=ann", "--json", "a", "b"]),
        (["context", "--user", "ann"], ["context", "--user", "ann"]),
        (
            ["--url", "http://h", "--token", "t", "doctor"],
            ["doctor", "--url", "http://h", "--token", "t"],
        ),
        (["--user", "context", "context"], ["context", "--user", "context"]),
    ],
)
def test_global_options_before_the_subcommand_move_after_it(
    argv: list[str], expected: list[str]
) -> None:
    assert hoist_global_options(argv, COMMANDS) == expected


class _Stub(BaseHTTPRequestHandler):
    """/healthz always; the API open, or requiring the token `good`."""

    open_service = False

    def do_GET(self) -> None:
        auth = self.headers.get("Authorization", "")
        if self.path == "/healthz":
            self._send(200, {"status": "ok"})
        elif self.open_service or auth == "Bearer good":
            self._send(200, {"entities": [], "count": 0, "tokens": []})
        else:
            self._send(401, {"error": {"code": "unauthorized", "message": "no"}})

    def _send(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


def _serve(open_service: bool) -> Iterator[str]:
    handler = type("Stub", (_Stub,), {"open_service": open_service})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def locked() -> Iterator[str]:
    yield from _serve(open_service=False)


@pytest.fixture
def open_url() -> Iterator[str]:
    yield from _serve(open_service=True)


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "ENTITY_MEMORY_HOME": str(tmp_path / "em"),
        "NO_PROXY": "*",
    }


def test_doctor_with_a_good_token_says_it_is_accepted(locked: str, tmp_path: Path) -> None:
    done = run_cli(
        "--url", locked, "--token", "good", "--user", "ann", "doctor", env=_env(tmp_path)
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "the token is accepted for user ann" in done.stdout


def test_doctor_without_a_token_says_one_is_needed(locked: str, tmp_path: Path) -> None:
    done = run_cli("doctor", "--url", locked, "--user", "ann", env=_env(tmp_path))
    assert done.returncode == 1
    assert "no token set" in done.stdout and "accepted" not in done.stdout


def test_doctor_on_an_open_service_never_claims_a_token_was_checked(
    open_url: str, tmp_path: Path
) -> None:
    for creds in ([], ["--token", "anything"]):
        done = run_cli("doctor", "--url", open_url, "--user", "ann", *creds, env=_env(tmp_path))
        assert done.returncode == 0, done.stdout
        assert "without API_TOKEN" in done.stdout and "token is accepted" not in done.stdout


@pytest.mark.parametrize("args", [["--user", "a/b", "entities"], ["entities", "--user", "a/b"]])
def test_a_bad_user_id_is_an_id_error_not_a_404(args: list[str], tmp_path: Path) -> None:
    done = run_cli("--url", "http://127.0.0.1:9", *args, env=_env(tmp_path))
    assert done.returncode == 2
    assert "invalid user id 'a/b'" in done.stderr and "404" not in done.stderr


def test_a_bad_entity_id_is_an_id_error(tmp_path: Path) -> None:
    done = run_cli("get", "campaign", "a/b", "--user", "ann", env=_env(tmp_path))
    assert done.returncode == 2 and "invalid entity id 'a/b'" in done.stderr


def _git_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_install_adds_the_settings_file_to_gitignore(tmp_path: Path) -> None:
    project = _git_repo(tmp_path / "proj")
    args = ["install", "claude-code", "--dir", str(project), "--token", "emu_secret"]
    done = run_cli(*args, "--command", "entity-memory", env=_env(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "/.claude/settings.local.json" in (project / ".gitignore").read_text()
    status = subprocess.run(
        ["git", "-C", str(project), "status", "--porcelain", "--untracked-files=all"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "settings.local.json" not in status and ".gitignore" in status
    # A second install leaves .gitignore as it is.
    before = (project / ".gitignore").read_text()
    assert run_cli(*args, env=_env(tmp_path)).returncode == 0
    assert (project / ".gitignore").read_text() == before


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_install_refuses_a_token_for_a_tracked_settings_file(tmp_path: Path) -> None:
    project = _git_repo(tmp_path / "proj")
    settings = project / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    settings.write_text("{}\n")
    subprocess.run(["git", "-C", str(project), "add", "-f", str(settings)], check=True)
    args = ["install", "claude-code", "--dir", str(project), "--token", "emu_secret"]
    done = run_cli(*args, env=_env(tmp_path))
    assert done.returncode == 2 and "tracked by git" in done.stderr
    assert "emu_secret" not in settings.read_text()


def test_the_documented_install_puts_the_cli_on_the_path(tmp_path: Path) -> None:
    """README: `pip install ./clients/python` into the environment you use."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", str(REPO / "clients" / "python")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert pip.returncode == 0, pip.stderr[-2000:]
    path = f"{venv / 'bin'}{os.pathsep}/usr/bin:/bin"
    found = shutil.which("entity-memory", path=path)
    assert found == str(venv / "bin" / "entity-memory")
    help_text = subprocess.run(
        ["entity-memory", "--help"],
        env={"PATH": path, "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "before or after the subcommand" in help_text


def test_remember_says_why_nothing_was_stored() -> None:
    from entity_memory_client.mcp_server import why_nothing_stored

    rejected = {
        "processed": True,
        "entities": [],
        "rejected": [{"item": {"name": "Zulu"}, "reason": "ungrounded: not in the conversation"}],
    }
    assert why_nothing_stored(rejected) == (
        "every candidate was rejected: Zulu: ungrounded: not in the conversation"
    )
    assert "already processed" in why_nothing_stored({"processed": False})
    assert "found no campaign" in why_nothing_stored({"processed": True, "extractor": "rules"})


def test_search_lines_show_a_flag_as_a_word_not_a_signal() -> None:
    from entity_memory_client.cli import score_lines

    scores = [
        {
            "type": "preference",
            "name": "Short replies",
            "score": 0.5,
            "relevance": 0.2,
            "alwaysInjected": True,
            "semantic": None,
        },
        {
            "type": "campaign",
            "name": "Kestrel",
            "score": 0.7,
            "relevance": 0.9,
            "alwaysInjected": False,
        },
    ]
    flagged, plain = score_lines(scores)
    assert "always in context" in flagged and "alwaysInjected" not in flagged
    assert "relevance 0.20" in flagged
    assert "always" not in plain and "alwaysInjected" not in plain
