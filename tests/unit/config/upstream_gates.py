"""Read the kubelet's feature gates out of upstream's Go source (the Go module cache at v1.37.2).

The kubelet's gate set is what its binary registers in utilfeature.DefaultMutableFeatureGate:
pkg/features (Kubernetes' own, with the generic apiserver's, apiextensions', zpages' and the cloud
controller manager's gates in the same map), k8s.io/apiserver, k8s.io/apiextensions-apiserver,
client-go's features (added through pkg/features' clientAdapter), component-base's logs and
zpages gates, and the two special gates AllAlpha and AllBeta. tests/unit/config/test_feature_gates.py compares
nodeagent/config/gatelist.py with this; `python -m tests.unit.config.upstream_gates` prints the
table to paste there after an upgrade.
"""

from __future__ import annotations

import re
from pathlib import Path

MOD = Path("/root/go/pkg/mod/k8s.io")
# file -> the Go variable or function whose map literal holds versioned specs
SOURCES = (
    (MOD / "kubernetes@v1.37.2/pkg/features/kube_features.go", "var defaultVersionedKubernetesFeatureGates ="),
    (MOD / "apiserver@v0.37.2/pkg/features/kube_features.go", "var defaultVersionedKubernetesFeatureGates ="),
    (MOD / "apiextensions-apiserver@v0.37.2/pkg/features/kube_features.go",
     "var defaultVersionedKubernetesFeatureGates ="),
    (MOD / "client-go@v0.37.2/features/known_features.go", "var defaultVersionedKubernetesFeatureGates ="),
    (MOD / "component-base@v0.37.2/logs/api/v1/kube_features.go", "func featureGates()"),
    (MOD / "component-base@v0.37.2/zpages/features/kube_features.go", "func featureGates()"),
)
# only their constants: pkg/features lists these gates in its own map (kcmfeatures.X); the kubelet
# never registers the controller manager's map itself
CONSTANTS_ONLY = (MOD / "controller-manager@v0.37.2/pkg/features/kube_features.go",)
DEPENDENCIES = (MOD / "kubernetes@v1.37.2/pkg/features/kube_features.go",
                "var defaultKubernetesFeatureGateDependencies =")

_ENTRY = re.compile(r"^\t+([\w.]+): \{\n(.*?)^\t+\},", re.M | re.S)
_SPEC = re.compile(r"\{(Version: [^}]*)\}")
_DEP = re.compile(r"^\t([\w.]+): \{([^}]*)\},", re.M)

Spec = tuple[int, bool, str, bool, int | None]  # (minor, default, prerelease, locked, min compatibility minor)


def available() -> bool:
    return all(path.exists() for path in [p for p, _ in SOURCES] + list(CONSTANTS_ONLY))


def _block(text: str, start: str) -> str:
    i = text.index(start)
    return text[i:text.index("\n}\n", i)]


def _minor(version: str) -> int:
    major, minor = version.split(".")
    assert major == "1", version
    return int(minor)


_CONST = re.compile(r'^\t(\w+)\s+(?:(?:featuregate\.)?Feature\s+)?=\s+(?:featuregate\.Feature\()?"([^"]+)"', re.M)


def _constants() -> dict[str, str]:
    """Go constant -> gate name: a few differ (CPUCFSQuotaPeriod is "CustomCPUCFSQuotaPeriod")."""
    paths = [path for path, _ in SOURCES] + list(CONSTANTS_ONLY)
    return {k: v for path in paths for k, v in _CONST.findall(path.read_text())}


def _name(ident: str, constants: dict[str, str]) -> str:
    bare = ident.removeprefix("featuregate.Feature(").rstrip(")").rpartition(".")[2]
    return constants[bare]


def _parse_spec(body: str) -> Spec:
    fields = dict(part.split(": ", 1) for part in body.split(", "))
    mincompat = fields.get("MinCompatibilityVersion")
    return (_minor(re.sub(r'version\.MustParse\("([\d.]+)"\)', r"\1", fields["Version"])),
            fields["Default"] == "true", fields["PreRelease"].rpartition(".")[2],
            fields.get("LockToDefault") == "true",
            _minor(re.sub(r'version\.MustParse\("([\d.]+)"\)', r"\1", mincompat)) if mincompat else None)


def gates() -> dict[str, tuple[Spec, ...]]:
    """Every gate the kubelet binary knows, with its versioned specs."""
    out: dict[str, tuple[Spec, ...]] = {}
    constants = _constants()
    for path, start in SOURCES:
        for m in _ENTRY.finditer(_block(path.read_text(), start)):
            specs = tuple(_parse_spec(s) for s in _SPEC.findall(m.group(2)))
            name = _name(m.group(1), constants)
            assert out.get(name, specs) == specs, f"{name}: two different specs"
            out[name] = specs
    return out


def dependencies() -> dict[str, tuple[str, ...]]:
    path, start = DEPENDENCIES
    out = {}
    constants = _constants()
    for m in _DEP.finditer(_block(path.read_text(), start)):
        deps = tuple(_name(d.strip(), constants) for d in m.group(2).split(",") if d.strip())
        if deps:
            out[_name(m.group(1), constants)] = deps
    return out


def table() -> str:
    """gatelist.py's table text: one gate a line, `Name minor:default:prerelease[:locked][:mincompat] ...`."""
    lines = []
    for name, specs in sorted(gates().items()):
        cells = []
        for minor, default, pre, locked, mincompat in specs:
            cell = f"{minor}:{'on' if default else 'off'}:{pre}"
            cell += ":locked" if locked else ""
            cell += f":min{mincompat}" if mincompat is not None else ""
            cells.append(cell)
        lines.append(f"{name} {' '.join(cells)}")
    return "\n".join(lines)


def dependency_table() -> str:
    return "\n".join(f"{name} {' '.join(deps)}" for name, deps in sorted(dependencies().items()))


if __name__ == "__main__":
    print(table())
    print("---")
    print(dependency_table())
