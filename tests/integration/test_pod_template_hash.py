"""The pod-template-hash the embedded deployment controller computes equals upstream's
controller.ComputeHash, run by tests/fixtures/gotypes (k8s.io/api v0.37.2 + go-spew; built
through the Go module proxy, skipped without Go or the proxy), and the packaged Go type layout
(nodeagent/apis/gotypes/podtemplatespec.json) is what that program prints today."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from nodeagent.controlplane.workloads import podhash
from tests.integration import gotools
from tests.unit.workloads.templates import TEMPLATES

pytestmark = [pytest.mark.integration]

REPO = Path(__file__).resolve().parents[2]
MODULE = REPO / "tests" / "fixtures" / "gotypes"
TABLE = REPO / "nodeagent" / "apis" / "gotypes" / "podtemplatespec.json"


@pytest.fixture(scope="module")
def gotypes() -> Path:
    return gotools.build_cached(MODULE, "gotypes")


def test_the_packaged_go_type_layout_is_current(gotypes: Path) -> None:
    out = subprocess.run([str(gotypes), "types"], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(out.stdout) == json.loads(TABLE.read_text())


def test_the_packaged_serialized_fields_are_current(gotypes: Path) -> None:
    """nodeagent/apis/gotypes/serialized.json (apiserver/apply/goserialized.py) is what `gotypes
    serialized` prints from k8s.io/api v0.37.2's types today."""
    out = subprocess.run([str(gotypes), "serialized"], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(out.stdout) == json.loads((TABLE.parent / "serialized.json").read_text())


def test_the_hash_equals_upstreams(gotypes: Path) -> None:
    lines = "".join(json.dumps({"template": t, "collisionCount": c}) + "\n" for t, c in TEMPLATES.values())
    out = subprocess.run([str(gotypes), "hash"], input=lines, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    want = dict(zip(TEMPLATES, out.stdout.split(), strict=True))
    got = {name: podhash.compute_hash(t, c) for name, (t, c) in TEMPLATES.items()}
    assert got == want


def test_the_statefulset_revision_hash_equals_upstreams(gotypes: Path) -> None:
    """getPatch + history.HashControllerRevision (a StatefulSet's revision name), for the same templates."""
    from nodeagent.controlplane.workloads import revision

    lines = "".join(json.dumps({"template": t, "collisionCount": c}) + "\n" for t, c in TEMPLATES.values())
    out = subprocess.run([str(gotypes), "revisionhash"], input=lines, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    want = dict(zip(TEMPLATES, out.stdout.split(), strict=True))
    got = {name: revision.hash_revision(revision.template_patch(t), c) for name, (t, c) in TEMPLATES.items()}
    assert got == want
