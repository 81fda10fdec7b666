"""Reading a plugin's YAML profile: the one file read, and the checks every profile parser repeats.

Each plugin parses its own profile into frozen dataclasses (pure, no I/O); this module holds the
parts that are the same for all of them, so a profile error reads the same whichever plugin
reports it: the file read with ConfigError texts naming the file, and the unknown-field check
naming the field path. The typed getters stay with each plugin's parser: their texts differ
(see each profile.py).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any, TypeVar

import yaml

from nodeagent.plugin_kit import ConfigError

P = TypeVar("P")


def load_profile(path: Path, parse: Callable[[Any, str], P]) -> P:
    """Read `path` as YAML and return `parse(document, str(path))`; unreadable or bad YAML -> ConfigError."""
    try:
        doc = yaml.safe_load(path.read_text())
    except OSError as err:
        raise ConfigError(f"{path}: {err.strerror}") from None
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: invalid YAML: {err}") from None
    return parse(doc, str(path))


def reject_unknown(doc: Mapping[str, Any], path: str, allowed: Collection[str], *, list_known: bool = False) -> None:
    """Raise ConfigError `<path>.<key>: unknown field` for the first key not in `allowed`.

    list_known: append ` (known: a, b, ...)`, in the order `allowed` gives.
    """
    for key in doc:
        if key not in allowed:
            known = f" (known: {', '.join(allowed)})" if list_known else ""
            raise ConfigError(f"{path}.{key}: unknown field{known}")
