"""Hatch build hook: generate nodeagent/apis from protos/ with grpc_tools.protoc.

Why a hook: generated code is never committed or edited (STYLE.md rule 2); every wheel
and editable build regenerates it, so the protos are the single source of truth. The
folder tree under protos/ mirrors the Python package, so protoc's imports come out
right with no rewriting. Type stubs come from mypy-protobuf when its plugins are
installed in the build environment, else from protoc's own --pyi_out.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


def _plugin(name: str) -> str | None:
    here = Path(sys.executable).parent / name
    if here.exists():
        return str(here)
    return shutil.which(name)


def generate(root: Path) -> list[str]:
    """Run protoc over every .proto under root/protos; return the generated paths."""
    import grpc_tools
    from grpc_tools import protoc

    protos = root / "protos"
    files = sorted(str(p.relative_to(protos)) for p in protos.rglob("*.proto"))
    include = Path(grpc_tools.__file__).parent / "_proto"
    args = ["protoc", f"-I{protos}", f"-I{include}", f"--python_out={root}", f"--grpc_python_out={root}"]
    mypy_plugin, mypy_grpc_plugin = _plugin("protoc-gen-mypy"), _plugin("protoc-gen-mypy_grpc")
    if mypy_plugin and mypy_grpc_plugin:
        args += [
            f"--plugin=protoc-gen-mypy={mypy_plugin}",
            f"--plugin=protoc-gen-mypy_grpc={mypy_grpc_plugin}",
            f"--mypy_out={root}",
            f"--mypy_grpc_out={root}",
        ]
    else:
        args.append(f"--pyi_out={root}")
    rc = protoc.main([*args, *files])
    if rc != 0:
        raise RuntimeError(f"protoc failed with exit code {rc} on {protos}")
    generated: list[str] = []
    for proto in files:
        stem = proto[: -len(".proto")]
        for suffix in ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py", "_pb2_grpc.pyi"):
            if (root / f"{stem}{suffix}").exists():
                generated.append(f"{stem}{suffix}")
    return generated


class CustomBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    """Generates the protobuf modules before hatchling collects files."""

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name not in ("wheel", "sdist"):
            return
        if self.target_name == "sdist":
            return  # the sdist ships protos/ and this hook; wheels built from it regenerate
        generated = generate(Path(self.root))
        build_data.setdefault("artifacts", []).extend(generated)
