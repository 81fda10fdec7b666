"""YAML bounds (alias expansion, depth, size) on every path that reads YAML: refused fast, with upstream's text.

The depth cases hold with every PyYAML pyproject's range allows, with libyaml's parser and the
pure-Python one: PyYAML 6.0.4's libyaml refuses nesting of its own from 1000 levels, earlier
releases and the pure-Python parser do not (checked in scratch virtualenvs with 6.0.1 to 6.0.4).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from nodeagent.admin.backend import parse_manifest
from nodeagent.apiserver.schema.decoding import MAX_DEPTH, BodyDecodeError, decode_json, decode_yaml
from nodeagent.errors import ValidationError
from nodeagent.objects import yaml_budget
from nodeagent.pods.static import MAX_CONFIG_LENGTH, ManifestFileError, load_manifest


def bomb() -> str:
    """The classic billion laughs: 9 levels of 9 aliases, a few hundred bytes, 9**9 nodes expanded."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    prev = "a"
    for c in "bcdefghi":
        lines.append(f"{c}: &{c} [" + ",".join([f"*{prev}"] * 9) + "]")
        prev = c
    return "\n".join(lines) + "\n"


def flow(levels: int) -> str:
    """`levels` nested flow sequences under a mapping: levels + 1 collections deep."""
    return "a: " + "[" * levels + "]" * levels + "\n"


def block(levels: int) -> str:
    """`levels` nested block sequences."""
    return "".join("  " * i + "- \n" for i in range(levels))


DEEP = flow(5000)
ALIASING = "document contains excessive aliasing"
DEPTH = f"exceeded max depth of {yaml_budget.MAX_DEPTH}"
LOADERS = [pytest.param(yaml.SafeLoader, id="python")]
if hasattr(yaml, "CSafeLoader"):
    LOADERS.append(pytest.param(yaml.CSafeLoader, id="libyaml"))


@pytest.mark.parametrize("loader", LOADERS)
@pytest.mark.parametrize("text", [flow(yaml_budget.MAX_DEPTH - 1), block(yaml_budget.MAX_DEPTH)], ids=["flow", "block"])
def test_depth_at_the_bound_passes(text: str, loader: object) -> None:
    yaml_budget.check(text, loader=loader)


@pytest.mark.parametrize("loader", LOADERS)
@pytest.mark.parametrize("text", [flow(yaml_budget.MAX_DEPTH), block(yaml_budget.MAX_DEPTH + 1),
                                  flow(yaml_budget.LIBYAML_MAX_NESTING), block(yaml_budget.LIBYAML_MAX_NESTING + 5)],
                         ids=["flow-251", "block-251", "flow-1001", "block-1005"])
def test_depth_over_the_bound_is_refused_with_the_budgets_text(text: str, loader: object) -> None:
    """Whichever parser's limit comes first (the count at 251, or libyaml's own from 1000); DEEP
    (5000 levels) goes through every caller below with the default loader. (The pure-Python
    scanner needs about a second of CPU for 1000 flow levels: production uses libyaml.)"""
    with pytest.raises(yaml_budget.YAMLBudgetError, match=f"^{DEPTH}$"):
        yaml_budget.check(text, loader=loader)


def test_a_syntax_error_is_left_to_the_loader() -> None:
    yaml_budget.check("a: [b\n")
    with pytest.raises(yaml.YAMLError):
        yaml_budget.safe_load("a: [b\n")


@pytest.mark.parametrize(("text", "message"), [(bomb(), ALIASING), (DEEP, DEPTH),
                                               ("a: &a [*a]\n", "anchor 'a' value contains itself")])
def test_budget_refuses_quickly(text: str, message: str) -> None:
    start = time.monotonic()
    with pytest.raises(yaml_budget.YAMLBudgetError, match=message):
        yaml_budget.check(text)
    assert time.monotonic() - start < 2


def test_ordinary_aliases_and_documents_pass() -> None:
    text = "base: &b {cpu: 1}\nx: *b\ny: *b\n---\nkind: Pod\n"
    assert yaml_budget.safe_load_all(text) == [{"base": {"cpu": 1}, "x": {"cpu": 1}, "y": {"cpu": 1}}, {"kind": "Pod"}]


def test_api_server_decoding() -> None:
    start = time.monotonic()
    with pytest.raises(BodyDecodeError, match=f"^error converting YAML to JSON: yaml: {ALIASING}$"):
        decode_yaml(bomb().encode())
    # the API server bounds a body at decoding.MAX_DEPTH (answers wrap it in a few more levels)
    with pytest.raises(BodyDecodeError, match=f"exceeded max depth of {MAX_DEPTH}"):
        decode_yaml(DEEP.encode())
    assert time.monotonic() - start < 2


def test_api_server_json_decoding_replaces_lone_surrogates() -> None:
    value, _ = decode_json(b'{"name": "a\\ud83d", "ok": "\\ud83d\\ude80"}')
    assert value == {"name": "a\ufffd", "ok": "\U0001f680"}


def test_admin_parse_manifest() -> None:
    start = time.monotonic()
    with pytest.raises(ValidationError, match=ALIASING):
        parse_manifest(bomb())
    with pytest.raises(ValidationError, match=DEPTH):
        parse_manifest(DEEP)
    assert time.monotonic() - start < 2


def test_static_pod_file(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(bomb())
    start = time.monotonic()
    with pytest.raises(ManifestFileError, match=f"yaml: {ALIASING}"):
        load_manifest(path)
    path.write_text(DEEP)
    with pytest.raises(ManifestFileError, match=DEPTH):
        load_manifest(path)
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * (MAX_CONFIG_LENGTH + 1))
    with pytest.raises(ManifestFileError, match=f"file is larger than {MAX_CONFIG_LENGTH} bytes"):
        load_manifest(big)
    assert time.monotonic() - start < 2
