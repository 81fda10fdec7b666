"""CEL device selectors with Kubernetes's DRA variables: selectors.py compiles and evaluates, relations.py
makes version values compare as Kubernetes's semver type does.

Why a package of its own at the bottom: the API's validation (objects/resource/device_class.py compiles a
DeviceClass's or claim's selectors at admission, as the API server does) and the control plane's
allocator (which evaluates them against devices) both need it, and validation sits below the
control plane. Kept under controlplane/ it made objects/ import the control plane, a cycle through
half the packages. It imports only quantity and errors, never the objects, the store or the allocator.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import types
from typing import Any


class _OnFirstUse(types.ModuleType):
    """A module whose code runs when one of its attributes is first read (its spec, name and file are
    there before: the import system reads them without running it)."""

    def __getattr__(self, name: str) -> Any:
        spec = self.__spec__
        self.__class__ = types.ModuleType  # type: ignore[assignment]  # back to a plain module: runs once
        assert spec is not None and spec.loader is not None
        spec.loader.exec_module(self)
        return getattr(self, name)


def _defer_cel_cli() -> None:
    """Make the `cel` package's `cli` submodule run on first use instead of with the package.

    Why: the package's __init__ imports its command line (`from . import cli`: typer, rich,
    prompt_toolkit, pygments), 272 modules and ~13 MiB of RSS in the daemon as soon as one selector
    is compiled (bench/scheduler_peer.py's DeviceClass), and the daemon never runs that command
    line. The submodule is put in sys.modules, not run, before the package is first imported, so
    the package's import of it binds a module that runs when one of its attributes is read. The
    `cel` console script does not import this package: unchanged. Nothing to do when `cel` is
    imported already or not installed. (importlib's LazyLoader does not serve: the import system
    reads the module's __spec__, which runs a lazy module.)"""
    if "cel" in sys.modules or "cel.cli" in sys.modules:
        return
    spec = importlib.util.find_spec("cel")  # a top-level name: located, not imported
    if spec is None or spec.origin is None:
        return
    path = os.path.join(os.path.dirname(spec.origin), "cli.py")
    cli = importlib.util.spec_from_file_location("cel.cli", path) if os.path.exists(path) else None
    if cli is None or cli.loader is None:
        return
    module = importlib.util.module_from_spec(cli)
    module.__class__ = _OnFirstUse
    sys.modules["cel.cli"] = module


_defer_cel_cli()
