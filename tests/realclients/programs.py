"""The third-party programs of the real-clients tier, built unchanged from their published Go modules.

Each program has its own Go module under tests/fixtures/realclients/NAME whose go.mod pins the
published release and names the program's commands in `tool` directives; nothing of the program's
source is in this repository. `go build -o DIR/ tool` builds those commands from the module cache,
and gotools.build_cached keeps the binaries outside the repo (~/.cache/nodeagent/go-fixtures) for as
long as the go.mod, go.sum and the Go version stay the same, so only the first run pays for the build.

The tier is opt-in (NODEAGENT_REAL_CLIENTS=1, `make test-real-clients`): a cold build of every program
takes many minutes on two cores. Without Go or the module proxy a test skips with the reason.
`python -m tests.realclients.programs` builds every program and prints how long each took.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.integration import gotools

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "realclients"
ENABLE_ENV = "NODEAGENT_REAL_CLIENTS"
BUILD_TIMEOUT = 3000.0  # a cold build shares two cores with everything else


@dataclass(frozen=True)
class Program:
    """One published program: its fixture module and the binary the tests start first."""

    name: str  # the folder under tests/fixtures/realclients
    binary: str  # one command its tool directives build (the others land beside it)

    @property
    def module_dir(self) -> Path:
        return FIXTURES / self.name

    def requirement(self, module: str) -> str:
        """The version of `module` the fixture's go.mod pins (for messages and the module cache)."""
        found = re.search(rf"^\s*(?:require\s+)?{re.escape(module)} (v\S+)", (self.module_dir / "go.mod").read_text(),
                          re.M)
        assert found, f"{self.module_dir / 'go.mod'} does not require {module}"
        return found.group(1)


DRA_EXAMPLE_DRIVER = Program("dra-example-driver", "dra-example-kubeletplugin")
SAMPLE_DEVICE_PLUGIN = Program("sample-device-plugin", "sample-device-plugin")
NFD_TOPOLOGY_UPDATER = Program("nfd-topology-updater", "nfd-topology-updater")
HELM = Program("helm", "helm")  # the Helm CLI, to install dra-example-driver's chart from its module
PROGRAMS = (DRA_EXAMPLE_DRIVER, SAMPLE_DEVICE_PLUGIN, NFD_TOPOLOGY_UPDATER, HELM)


def tier_enabled() -> bool:
    return os.environ.get(ENABLE_ENV, "").strip().lower() in ("1", "true", "yes")


def require_tier() -> None:
    if not tier_enabled():
        pytest.skip(f"the real-clients tier is opt-in: set {ENABLE_ENV}=1 (or run `make test-real-clients`); "
                    "its first run builds third-party programs from the Go module proxy")


def build(program: Program) -> Path:
    """The program's binary (its sibling commands in the same folder), built once and cached."""
    return gotools.build_cached(program.module_dir, program.binary, timeout=BUILD_TIMEOUT, packages=("tool",))


def module_source(module: str, version: str, fixture: Program) -> Path:
    """Where the Go module cache holds module@version (downloaded for the fixture's build): for the files a
    program ships beside its code (NFD's NodeResourceTopology CRD, the example driver's demo specs)."""
    go = gotools.go_binary()
    if go is None:
        pytest.skip("`go` is not installed")
    out = subprocess.run([go, "mod", "download", "-json", f"{module}@{version}"], cwd=fixture.module_dir,
                         env=gotools.go_env(), capture_output=True, text=True, timeout=300)
    try:
        return Path(json.loads(out.stdout)["Dir"])
    except (ValueError, KeyError):
        pytest.skip(f"cannot download {module}@{version} from the Go module proxy: {(out.stderr + out.stdout)[-300:]}")


def main() -> int:
    """Build every program (cold or cached) and print the time each took: the figures the notes report.

    Never fails: a program that cannot be built is reported here, and its tests skip (no Go, no proxy)
    or fail (a compile error) with the same reason when pytest builds it again.
    """
    for program in PROGRAMS:
        started = time.monotonic()
        try:
            path = build(program)
        except (Exception, pytest.skip.Exception) as err:  # pytest.skip raises outside pytest too
            print(f"{program.name}: not built ({type(err).__name__}: {str(err)[-500:]})", flush=True)
            continue
        print(f"{program.name}: {path.parent} in {time.monotonic() - started:.0f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
