"""pylock.toml, the one lock of the Pyodide packages: read it and compare things against it.

Standard library only (scripts/deploy runs before scripts/setup has made the venv). What it
compares: pyproject.toml's dependencies (each must be locked at a version it accepts), the
wheel set scripts/setup downloaded for the local host and the tests (local/.wheels: exactly the
locked files, by sha256), and a vendored python_modules/ (exactly the locked versions: what
`pywrangler deploy` uploads). A difference in any of them is drift: production would not run
the versions the tests ran.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path

LOCK_NAME = "pylock.toml"
#: pywrangler adds it to the project's dependencies (resolve.MANAGED_SDK_PACKAGE); since
#: `enable_python_external_sdk` (2026-04-21) the runtime no longer provides it.
SDK_PACKAGE = "workers-runtime-sdk"
FIX = "run `.venv/bin/python scripts/lock`, then scripts/setup"


@dataclass(frozen=True)
class Locked:
    name: str
    version: str
    wheel: str
    sha256: str


def normalize(name: str) -> str:
    """PEP 503: `Pydantic_Core` and `pydantic-core` are one package."""
    return re.sub(r"[-_.]+", "-", name).lower()


def read_lock(path: Path) -> dict[str, Locked]:
    """{normalized name: package}; raises ValueError on a lock that is not one."""
    try:
        data = tomllib.loads(path.read_text())
        return {
            normalize(p["name"]): Locked(
                p["name"], p["version"], p["wheels"][0]["name"], p["wheels"][0]["hashes"]["sha256"]
            )
            for p in data["packages"]
        }
    except (OSError, tomllib.TOMLDecodeError, KeyError, IndexError, TypeError) as exc:
        raise ValueError(
            f"{path.name} is not a readable lock ({type(exc).__name__}: {exc})"
        ) from exc


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version.split("+")[0])[:4])


def _accepts(op: str, wanted: str, version: str) -> bool:
    if op == "~=":  # ~=2.12 is >=2.12 and ==2.*
        prefix = wanted.rsplit(".", 1)[0] + ".*"
        return _accepts(">=", wanted, version) and _accepts("==", prefix, version)
    have = _release(version)
    if wanted.endswith(".*"):
        want = _release(wanted[:-2])
        return (have[: len(want)] == want) == (op == "==")
    want = _release(wanted)
    pad = max(len(have), len(want))
    have, want = have + (0,) * (pad - len(have)), want + (0,) * (pad - len(want))
    return {
        "==": have == want,
        "!=": have != want,
        ">=": have >= want,
        "<=": have <= want,
        ">": have > want,
        "<": have < want,
    }[op]


def requirement_drift(requirement: str, lock: dict[str, Locked]) -> str | None:
    """Why the lock does not satisfy one PEP 508 requirement (None when it does)."""
    head = requirement.split(";")[0].strip()
    match = re.match(r"([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(.*)", head)
    if not match:
        return f"cannot read the requirement {requirement!r}"
    name, specs = match.group(1), match.group(2)
    locked = lock.get(normalize(name))
    if locked is None:
        return f"{name} is required by pyproject.toml but not in {LOCK_NAME}; {FIX}"
    for op, wanted in re.findall(r"(~=|==|!=|>=|<=|>|<)\s*([^,\s]+)", specs):
        if not _accepts(op, wanted, locked.version):
            return (
                f"pyproject.toml asks {head}, {LOCK_NAME} has {locked.name} {locked.version}; {FIX}"
            )
    return None


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def wheels_drift(wheels_dir: Path, lock: dict[str, Locked]) -> list[str]:
    """How local/.wheels differs from the lock (a missing, changed or extra wheel)."""
    present = {p.name: p for p in wheels_dir.glob("*.whl")}
    problems = []
    for pkg in lock.values():
        wheel = present.pop(pkg.wheel, None)
        if wheel is None:
            problems.append(f"{pkg.name} {pkg.version}: {pkg.wheel} is not in local/.wheels")
        elif _sha256(wheel) != pkg.sha256:
            problems.append(f"{pkg.wheel} in local/.wheels is not the locked file (sha256)")
    problems += [f"{name} in local/.wheels is not in {LOCK_NAME}" for name in sorted(present)]
    return problems


def vendored_versions(vendor_dir: Path) -> dict[str, str]:
    """{normalized name: version} of the distributions installed in a python_modules/."""
    found = {}
    for info in vendor_dir.glob("*.dist-info"):
        name, _, version = info.name.removesuffix(".dist-info").rpartition("-")
        found[normalize(name)] = version
    return found


def vendored_drift(vendor_dir: Path, lock: dict[str, Locked]) -> list[str]:
    """How a python_modules/ differs from the lock: what deploy would upload instead."""
    found = vendored_versions(vendor_dir)
    problems = []
    for key, pkg in sorted(lock.items()):
        version = found.pop(key, None)
        if version != pkg.version:
            problems.append(f"{pkg.name}: locked {pkg.version}, vendored {version or 'none'}")
    problems += [f"{name} {v}: vendored, not locked" for name, v in sorted(found.items())]
    return problems


def vendor_wheels(wheels_dir: Path, lock: dict[str, Locked], target: Path) -> None:
    """Unpack the locked wheels into target, as `pywrangler sync` installs them (SDK included)."""
    target.mkdir()
    for pkg in lock.values():
        with zipfile.ZipFile(wheels_dir / pkg.wheel) as archive:
            archive.extractall(target)
    (target / "pyvenv.cfg").touch()
