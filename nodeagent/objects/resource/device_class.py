"""DeviceClass validation, and the device selection and configuration pieces a class shares
with a claim: CEL selectors (compiled at admission), opaque driver configuration and
`config[]` lists with their request references.

Why together: a DeviceClass spec is exactly these selectors and config entries, and a claim's
requests and `devices.config` reuse them with the same paths and limits, so both kinds call
into this one module (see claim.py and claim_status.py). CEL selectors are
compiled with nodeagent.cel.selectors.compile_selector. Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from nodeagent.cel.selectors import CelError, compile_selector
from nodeagent.objects import common as rc
from nodeagent.objects.common import JSON, join
from nodeagent.objects.pod.manifest import is_extended
from nodeagent.objects.resource.shared import (
    CEL_EXPRESSION_MAX_LENGTH,
    CONFIG_MAX,
    FROM_CLAIM,
    FROM_CLASS,
    OPAQUE_PARAMETERS_MAX_LENGTH,
    REQUESTS_MAX,
    SELECTORS_MAX,
    Ctx,
)
from nodeagent.store import validation as meta


def device_selectors(obj: Mapping[str, Any], path: str, errors: rc.Errors | None = None) -> list[JSON]:
    """`selectors[]`; with `errors`, every bad selector is collected there (DeviceClass), else the
    first one raises."""
    out: list[JSON] = []
    for k, raw in enumerate(rc.get_list(obj, "selectors", path, SELECTORS_MAX)):
        spath = f"{path}.selectors[{k}]" if path else f"selectors[{k}]"
        found = _selector(raw, spath) if errors is None else errors.check(_selector, raw, spath)
        if found is not None:
            out.append(found)
    return out


def _selector(raw: object, spath: str) -> JSON:
    sel = rc.as_obj(raw, spath)
    rc.fields(sel, spath, ("cel",))
    cel = rc.get_obj(sel, "cel", spath)
    if cel is None:
        raise meta.required(join(spath, "cel"))
    cpath = join(spath, "cel")
    rc.fields(cel, cpath, ("expression",))
    expression = rc.get_str(cel, "expression", cpath)
    compile_expression(join(cpath, "expression"), expression)
    return {"cel": {"expression": expression}}


EMPTY_EXPRESSION = ("compilation failed: ERROR: <input>:1:0: Syntax error: mismatched input '<EOF>' expecting "
                    "{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, "
                    "BYTES, IDENTIFIER}")
"""kube-apiserver v1.37.2's answer to an empty CEL selector (read off the real server)."""


def compile_expression(path: str, expression: str) -> None:
    """Compile a CEL selector at admission; a compile error is `Invalid value` with the compiler's text."""
    if not expression:
        # upstream compiles "" like any other expression: cel-go's parser error at column 0, no snippet
        raise meta.invalid(path, expression, EMPTY_EXPRESSION)
    if len(expression) > CEL_EXPRESSION_MAX_LENGTH:
        raise rc.too_long_bytes(path, CEL_EXPRESSION_MAX_LENGTH)
    if not expression.strip(" "):  # blanks: the same error at the end, with cel-go's snippet
        at = len(expression)
        detail = EMPTY_EXPRESSION.replace("<input>:1:0:", f"<input>:1:{at + 1}:")
        raise meta.invalid(path, expression, f"{detail}\n | {expression}\n | {'.' * at}^")
    try:
        compile_selector(expression)
    except CelError as err:
        # dracel's CompileCELExpression: "compilation failed: " and cel-go's issues, snippet lines " | "
        detail = err.detail.replace("\n| ", "\n | ")
        if detail.startswith("ERROR:"):  # a type error (must evaluate to bool...) is written as it is
            detail = f"compilation failed: {detail}"
        raise meta.invalid(path, expression, detail) from None


def _opaque(raw: object, path: str) -> JSON:
    opaque = rc.as_obj(raw, path)
    rc.fields(opaque, path, ("driver", "parameters"))
    driver = rc.get_str(opaque, "driver", path)
    rc.check_driver_name(join(path, "driver"), driver)
    params = opaque.get("parameters")
    ppath = join(path, "parameters")
    if params is None:
        raise meta.required(ppath)
    if not isinstance(params, Mapping):
        raise meta.invalid(ppath, "<value omitted>", "parameters must be a valid JSON object")
    if len(json.dumps(params, separators=(",", ":"), default=str)) > OPAQUE_PARAMETERS_MAX_LENGTH:
        raise rc.too_long_bytes(ppath, OPAQUE_PARAMETERS_MAX_LENGTH)
    return {"driver": driver, "parameters": dict(params)}


def config_list(
    obj: Mapping[str, Any], path: str, limit: int, refs: set[str] | None, *, source: bool = False,
    errors: rc.Errors | None = None,
) -> list[JSON]:
    """DeviceClass / claim / allocation `config[]`: optional requests, an opaque config, a source.
    With `errors`, every bad entry is collected there (DeviceClass), else the first one raises."""
    out: list[JSON] = []
    allowed = ["opaque"]
    if refs is not None:
        allowed.append("requests")
    if source:
        allowed.append("source")
    for i, raw in enumerate(rc.get_list(obj, "config", path, limit)):
        cpath = f"{path}.config[{i}]" if path else f"config[{i}]"
        args = (raw, cpath, allowed, refs, source)
        item = _config_entry(*args) if errors is None else errors.check(_config_entry, *args)
        if item is not None:
            out.append(item)
    return out


def _config_entry(raw: object, cpath: str, allowed: list[str], refs: set[str] | None, source: bool) -> JSON:
    entry = rc.as_obj(raw, cpath)
    rc.fields(entry, cpath, allowed)
    item: JSON = {}
    if source:
        src = rc.get_str(entry, "source", cpath)
        if not src:
            raise meta.required(join(cpath, "source"))
        if src not in (FROM_CLAIM, FROM_CLASS):
            raise meta.not_supported(join(cpath, "source"), src, (FROM_CLAIM, FROM_CLASS))
        item["source"] = src
    if refs is not None:
        requests = request_ref_list(entry, cpath, refs)
        if requests:
            item["requests"] = requests
    if entry.get("opaque") is None:
        raise meta.required(join(cpath, "opaque"))
    item["opaque"] = _opaque(entry["opaque"], join(cpath, "opaque"))
    return item


def request_ref_list(obj: Mapping[str, Any], path: str, refs: set[str]) -> list[str]:
    names = rc.get_list(obj, "requests", path, REQUESTS_MAX)
    for j, name in enumerate(names):
        if not isinstance(name, str):
            raise rc.type_error(f"{path}.requests[{j}]", name, "string")
        rc.check_request_ref(f"{path}.requests[{j}]", name, refs)
    rc.check_set(names, join(path, "requests"))
    return list(names)


# --- DeviceClass -------------------------------------------------------------------------------


def validate_device_class(doc: JSON, ctx: Ctx) -> None:
    """upstream's ValidateDeviceClass: every bad selector, config entry and field reported at once."""
    spec = rc.as_obj(doc.get("spec") or {}, "spec")
    rc.fields(spec, "spec", ("selectors", "config", "extendedResourceName", "suitableNodes"))
    errors = rc.Errors()
    out: JSON = {}
    if "selectors" in spec:
        out["selectors"] = device_selectors(spec, "spec", errors)
    if "config" in spec:
        out["config"] = config_list(spec, "spec", CONFIG_MAX, None, errors=errors)
    ext = rc.get_str(spec, "extendedResourceName", "spec")
    if "extendedResourceName" in spec and spec["extendedResourceName"] is not None:
        if not is_extended(ext):
            errors.append(meta.invalid("spec.extendedResourceName", ext, "must be a valid extended resource name"))
        out["extendedResourceName"] = ext
    if spec.get("suitableNodes") is not None:
        errors.check(rc.check_node_selector, "spec.suitableNodes", spec["suitableNodes"])
        out["suitableNodes"] = spec["suitableNodes"]
    errors.raise_all()
    doc["spec"] = out
