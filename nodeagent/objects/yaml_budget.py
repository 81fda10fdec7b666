"""Bounds on a YAML document before it is built: alias expansion and nesting depth.

Why: PyYAML shares an aliased node instead of copying it, so a few hundred bytes of nested
aliases ("billion laughs") load at once, and the cost comes later, when the object is walked,
copied or encoded as the fully expanded tree (a 474-byte bomb stalled every socket for 13 s).
Upstream decodes YAML with go-yaml, which counts what it decodes and refuses a document once
nodes decoded through aliases outweigh the rest ("yaml: document contains excessive aliasing",
the ratio `allowedAliasRatio` shrinks from 99 % up to 400,000 decoded nodes to 10 % from
4,000,000 on), and refuses deep nesting ("exceeded max depth of N"). This module runs that
budget over the parser's event stream, which is flat (no recursion, nothing expanded), before
the document is composed: one linear pass, then the caller loads the document as before.

The depth bound is 250, not go-yaml's 10,000: nothing deeper can be encoded by orjson (its
limit is 254 levels) or walked by the validators, and no Kubernetes object comes close.

The libyaml inside PyYAML 6.0.4's wheels has a nesting limit of its own: 1000 levels (libyaml's
max_nest_level, yaml_set_max_nest_level), "exceeded maximum nesting depth". Its scanner runs ahead
of the parser in flow context, so on `[[[[...` that refusal comes before the event stream has
reached level 251. A document over libyaml's limit is over this one too (more than 1000 nested
collections), so it is reported as this budget's refusal, with the same text whichever PyYAML the
ranges allow: 6.0.1-6.0.3's libyaml and the pure-Python parser have no such limit, the count fires.

Pure: no I/O.
"""

from __future__ import annotations

from typing import Any

import yaml

MAX_DEPTH = 250
LIBYAML_MAX_NESTING = 1000  # libyaml's default max_nest_level (the libyaml of PyYAML 6.0.4 on)
_LIBYAML_NESTING_PROBLEM = "exceeded maximum nesting depth"
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class YAMLBudgetError(yaml.YAMLError):
    """The document is over a bound; str() is the text after upstream's "yaml: " prefix."""


def allowed_alias_ratio(decoded: int) -> float:
    """go-yaml's allowedAliasRatio: 0.99 up to 400,000 decoded nodes, 0.10 from 4,000,000, linear between."""
    if decoded <= 400_000:
        return 0.99
    if decoded >= 4_000_000:
        return 0.10
    return 0.99 - 0.89 * (decoded - 400_000) / 3_600_000


def check(text: str | bytes, *, max_depth: int = MAX_DEPTH, loader: Any = None) -> None:
    """Raise YAMLBudgetError when any document of `text` nests deeper than `max_depth` or expands
    aliases beyond go-yaml's budget; syntax errors are left for the loader to report.

    `loader` is the PyYAML loader class whose parser runs the pass (default: libyaml's when PyYAML
    was built with it, else the pure-Python one)."""
    decoded = aliased = depth = 0
    sizes: dict[str, int] = {}  # anchor -> nodes it expands to
    open_: list[tuple[str | None, int]] = []  # (anchor, decoded count at its start) per open collection
    try:
        for event in yaml.parse(text, Loader=loader or _Loader):
            if isinstance(event, yaml.DocumentStartEvent):
                sizes.clear()
                continue
            if isinstance(event, yaml.AliasEvent):
                anchor = event.anchor
                if anchor not in sizes:
                    if any(a == anchor for a, _ in open_):
                        raise YAMLBudgetError(f"anchor '{anchor}' value contains itself")
                    continue  # an unknown anchor: the loader reports it
                decoded += sizes[anchor]
                aliased += sizes[anchor]
            elif isinstance(event, (yaml.ScalarEvent, yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                decoded += 1
                if isinstance(event, yaml.ScalarEvent):
                    if event.anchor is not None:
                        sizes[event.anchor] = 1
                else:
                    depth += 1
                    if depth > max_depth:
                        raise YAMLBudgetError(f"exceeded max depth of {max_depth}")
                    open_.append((event.anchor, decoded - 1))
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                depth -= 1
                anchor, start = open_.pop()
                if anchor is not None:
                    sizes[anchor] = decoded - start
                continue
            else:
                continue
            if aliased > 100 and decoded > 1000 and aliased / decoded > allowed_alias_ratio(decoded):
                raise YAMLBudgetError("document contains excessive aliasing")
    except YAMLBudgetError:
        raise
    except yaml.MarkedYAMLError as err:
        if err.problem == _LIBYAML_NESTING_PROBLEM and max_depth < LIBYAML_MAX_NESTING:
            raise YAMLBudgetError(f"exceeded max depth of {max_depth}") from None
        return  # a syntax error: the loader gives its own message
    except yaml.YAMLError:
        return


def safe_load(text: str | bytes) -> Any:
    """yaml.safe_load within the budget (the first document)."""
    check(text)
    return yaml.load(text, Loader=_Loader)


def safe_load_all(text: str | bytes) -> list[Any]:
    """yaml.safe_load_all within the budget (every document, as a list)."""
    check(text)
    return list(yaml.load_all(text, Loader=_Loader))
