"""`scripts/deploy --check` fails when the package lock drifts from what was tested.

Each test lays out a throw-away copy of the repository's deploy inputs (the scripts, a config
with its ids filled in, pyproject.toml, a pylock.toml and the wheel set it names), checks that
the copy passes, drifts one pin, and runs the real script on it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = {"pydantic": "2.14.4", "fastapi": "0.165.0", "workers-runtime-sdk": "1.9.5"}


def _lockfile() -> ModuleType:
    """scripts/lockfile.py, under a name no installed package has."""
    name = "entity_memory_scripts_lockfile"
    if name not in sys.modules:
        path = REPO / "scripts" / "lockfile.py"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec and spec.loader
        sys.modules[name] = importlib.util.module_from_spec(spec)  # for its dataclasses
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


def _wheel_name(name: str, version: str) -> str:
    return f"{name.replace('-', '_')}-{version}-py3-none-any.whl"


def _write_lock(root: Path, packages: dict[str, str]) -> None:
    text = 'lock-version = "1.0"\ncreated-by = "test"\n'
    for name, version in packages.items():
        wheel = _wheel_name(name, version)
        digest = hashlib.sha256(wheel.encode()).hexdigest()
        text += (
            f'\n[[packages]]\nname = "{name}"\nversion = "{version}"\n'
            f'wheels = [{{ name = "{wheel}", url = "https://example.invalid/{wheel}",'
            f' hashes = {{ sha256 = "{digest}" }} }}]\n'
        )
    (root / "pylock.toml").write_text(text)


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """A deployable copy: every check passes offline (tools linked from this checkout)."""
    (tmp_path / "scripts").mkdir()
    for script in ("deploy", "lockfile.py"):
        shutil.copy(REPO / "scripts" / script, tmp_path / "scripts" / script)
    (tmp_path / "src").mkdir()
    shutil.copy(REPO / "src" / "entry.py", tmp_path / "src" / "entry.py")
    config = (REPO / "wrangler.toml").read_text()
    config = config.replace('id = "00000000000000000000000000000000"', 'id = "0123abcd"')
    config = config.replace("00000000-0000-0000-0000-000000000000", "0123-abcd")
    (tmp_path / "wrangler.toml").write_text(config)
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\nversion = "0"\n'
        'dependencies = ["pydantic>=2.12,<3", "fastapi>=0.115"]\n'
    )
    _write_lock(tmp_path, PACKAGES)
    wheels = tmp_path / "local" / ".wheels"
    wheels.mkdir(parents=True)
    for name, version in PACKAGES.items():
        wheel = _wheel_name(name, version)
        (wheels / wheel).write_text(wheel)  # its sha256 is the lock's
    for tool in (".venv", "node_modules"):
        (tmp_path / tool).symlink_to(REPO / tool)
    return tmp_path


def _check(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(root / "scripts" / "deploy"), "--check", "--offline"],
        capture_output=True,
        text=True,
        timeout=60,
    )


def _drift_lines(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in done.stdout.splitlines() if "package drift" in line]


@pytest.mark.skipif(
    not (REPO / ".venv" / "bin" / "pywrangler").exists()
    or not (REPO / "node_modules" / ".bin" / "wrangler").exists(),
    reason="scripts/setup has not installed pywrangler and wrangler in this checkout",
)
def test_the_copy_passes_as_laid_out(copy: Path) -> None:
    done = _check(copy)
    assert done.returncode == 0, done.stdout
    assert "pylock.toml: 3 packages" in done.stdout


def test_a_dependency_the_lock_no_longer_satisfies_fails(copy: Path) -> None:
    pyproject = copy / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace("pydantic>=2.12,<3", "pydantic>=2.15"))
    done = _check(copy)
    assert done.returncode == 1
    (line,) = _drift_lines(done)
    assert "pydantic>=2.15" in line and "2.14.4" in line


def test_a_lock_pin_the_tests_did_not_run_fails(copy: Path) -> None:
    _write_lock(copy, {**PACKAGES, "pydantic": "2.14.5"})
    done = _check(copy)
    assert done.returncode == 1
    drift = "\n".join(_drift_lines(done))
    assert "pydantic 2.14.5" in drift  # locked, but not the wheel set the tests ran
    assert "pydantic-2.14.4" in drift  # and the tested wheel is not locked


def test_a_changed_wheel_file_fails(copy: Path) -> None:
    (copy / "local" / ".wheels" / _wheel_name("fastapi", "0.165.0")).write_text("other bytes")
    done = _check(copy)
    assert done.returncode == 1
    (line,) = _drift_lines(done)
    assert "fastapi" in line and "sha256" in line


def test_a_missing_sdk_in_the_lock_fails(copy: Path) -> None:
    _write_lock(copy, {k: v for k, v in PACKAGES.items() if k != "workers-runtime-sdk"})
    done = _check(copy)
    assert done.returncode == 1
    assert any("workers-runtime-sdk" in line for line in _drift_lines(done))


@pytest.mark.parametrize(
    ("requirement", "version", "accepted"),
    [
        ("pydantic>=2.12,<3", "2.14.4", True),
        ("pydantic>=2.12,<3", "3.0.0", False),
        ("fastapi~=0.115", "0.165.0", True),
        ("fastapi~=0.115.2", "0.116.0", False),
        ("fastapi==0.165.*", "0.165.3", True),
        ("fastapi!=0.165.0", "0.165.0", False),
        ("fastapi[standard]>=0.100; python_version >= '3.11'", "0.165.0", True),
    ],
)
def test_requirements_are_read_as_pep_440_ranges(
    requirement: str, version: str, accepted: bool
) -> None:
    lockfile = _lockfile()
    name = "pydantic" if requirement.startswith("pydantic") else "fastapi"
    lock = {name: lockfile.Locked(name, version, "w.whl", "0" * 64)}
    assert (lockfile.requirement_drift(requirement, lock) is None) is accepted


def test_the_repository_lock_locks_the_sdk_and_the_dependencies() -> None:
    lockfile = _lockfile()
    lock = lockfile.read_lock(REPO / "pylock.toml")
    assert lockfile.SDK_PACKAGE in lock
    assert all(len(pkg.sha256) == 64 for pkg in lock.values())
