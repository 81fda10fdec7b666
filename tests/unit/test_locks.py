"""The hashed locks (requirements/*.txt) agree with pyproject.toml and with each other.

`make run` and `make test` install only from the locks, so a range edited in pyproject.toml
without `make lock`, a test lock drifting from the runtime lock, or a build requirement missing
from them would install something else than what the project declares (or fail on a fresh
machine only). Parsed with `packaging`, the same rules pip applies.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.conftest import REPO

LOCKS = REPO / "requirements"
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^ ;\\]+)\s*(?:;\s*([^\\]+?))?\s*\\?$")


def read_lock(path: Path) -> dict[str, tuple[Version, Marker | None, int]]:
    """name -> (pinned version, marker, number of hashes) for every entry of a uv/pip-compile lock."""
    entries: dict[str, tuple[Version, Marker | None, int]] = {}
    current: str | None = None
    for line in path.read_text().splitlines():
        if match := PIN.match(line):
            current = canonicalize_name(match[1])
            marker = Marker(match[3]) if match[3] else None
            entries[current] = (Version(match[2]), marker, 0)
        elif line.strip().startswith("--hash=sha256:") and current is not None:
            version, marker, hashes = entries[current]
            entries[current] = (version, marker, hashes + 1)
        elif line and not line.startswith((" ", "#")):
            raise AssertionError(f"{path.name}: unexpected line {line!r}")
    return entries


def pyproject() -> dict[str, object]:
    with (REPO / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)


def requirements(kind: str) -> list[Requirement]:
    data = pyproject()
    project = data["project"]
    assert isinstance(project, dict)
    if kind == "build":
        build = data["build-system"]
        assert isinstance(build, dict)
        return [Requirement(r) for r in build["requires"]]
    if kind == "run":
        return [Requirement(r) for r in project["dependencies"]]
    return [Requirement(r) for r in project["optional-dependencies"]["test"]]


@pytest.mark.parametrize(("lock", "kinds"), [("run.txt", ["run", "build"]), ("test.txt", ["run", "build", "test"])])
def test_every_declared_requirement_is_pinned_within_its_range(lock: str, kinds: list[str]) -> None:
    pins = read_lock(LOCKS / lock)
    for kind in kinds:
        for req in requirements(kind):
            name = canonicalize_name(req.name)
            assert name in pins, f"{req} ({kind}) is not in requirements/{lock}: run `make lock`"
            version = pins[name][0]
            assert req.specifier.contains(version, prereleases=True), (
                f"requirements/{lock} pins {name}=={version} outside pyproject's {req}: run `make lock`")


@pytest.mark.parametrize("lock", ["run.txt", "test.txt"])
def test_every_pin_has_hashes(lock: str) -> None:
    for name, (_, _, hashes) in read_lock(LOCKS / lock).items():
        assert hashes >= 1, f"{name} has no hash in requirements/{lock}"


def test_runtime_lock_is_the_test_lock_without_the_test_extras() -> None:
    run, test = read_lock(LOCKS / "run.txt"), read_lock(LOCKS / "test.txt")
    for name, (version, _, _) in run.items():
        assert name in test, f"{name} is in run.txt only"
        assert test[name][0] == version, f"{name}: run.txt pins {version}, test.txt {test[name][0]}"
    test_only = {canonicalize_name(r.name) for r in requirements("test")} - set(run)
    assert test_only, "the test lock adds the test extras"
    assert not any(canonicalize_name(r.name) in test_only for r in requirements("run")), test_only


def test_build_input_is_pyprojects_build_system() -> None:
    lines = [line for line in (LOCKS / "build.in").read_text().splitlines() if line and not line.startswith("#")]
    declared = [str(r) for r in requirements("build")]
    assert lines[: len(declared)] == declared, "requirements/build.in is stale: run `make lock`"
