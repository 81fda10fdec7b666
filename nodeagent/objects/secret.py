"""Secrets: upstream's defaulting (type Opaque), the v1 conversion that folds `stringData` into
`data`, ValidateSecret and ValidateSecretUpdate (pkg/apis/core/validation), as store hooks.

Why in the store: every writer (kubectl, client-go, the controllers) must get the same result,
and `stringData` must never be stored (upstream's conversion to the internal type drops it
after writing its values over `data`'s, base64-encoded on the wire). Pure: no I/O.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from typing import Any

from nodeagent.errors import ValidationError
from nodeagent.objects.common import Errors
from nodeagent.store import validation as meta

JSON = dict[str, Any]

MAX_SECRET_SIZE = 1 * 1024 * 1024  # core.MaxSecretSize
_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
_CONFIG_KEY_MSG = ("a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  "
                   "or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')")
SERVICE_ACCOUNT_NAME_KEY = "kubernetes.io/service-account.name"


def default_secret(obj: JSON) -> JSON:
    """SetDefaults_Secret (type Opaque) and Convert_v1_Secret_To_core_Secret's stringData fold."""
    if not obj.get("type"):
        obj["type"] = "Opaque"
    strings = obj.pop("stringData", None)
    if isinstance(strings, Mapping) and strings:
        data = obj.get("data")
        data = dict(data) if isinstance(data, Mapping) else {}
        for key, value in strings.items():
            data[key] = base64.b64encode(str(value).encode()).decode()
        obj["data"] = data
    return obj


def config_key_errors(key: str) -> list[str]:
    """validation.IsConfigMapKey's messages."""
    out = []
    if len(key) > 253:
        out.append("must be no more than 253 characters")
    if not _CONFIG_KEY.match(key):
        out.append(_CONFIG_KEY_MSG)
    if key == ".":
        out.append("must not be '.'")
    elif key == "..":
        out.append("must not be '..'")
    elif key.startswith(".."):
        out.append("must not start with '..'")
    return out


def decoded_length(value: str) -> int:
    """The byte length of a base64 value ([]byte's JSON form, already checked by the decoder):
    its length without decoding it (a ConfigMap's binaryData counts toward core.MaxSecretSize)."""
    text = value.rstrip("=")
    return len(text) * 3 // 4


def _decoded(data: Mapping[str, Any]) -> dict[str, bytes]:
    out = {}
    for key, value in data.items():
        try:
            out[key] = base64.b64decode(str(value), validate=True)
        except (binascii.Error, ValueError):
            raise meta.invalid(f"data[{key}]", "<secret contents redacted>", "illegal base64 data") from None
    return out


def validate_secret(obj: JSON) -> None:
    """ValidateSecret: the name, config keys, the total size and each type's required keys."""
    errs = Errors()
    md = obj.get("metadata") or {}
    errs.check(meta.check_dns_subdomain, "metadata.name", str(md.get("name") or ""))
    raw = obj.get("data")
    if raw is not None and not isinstance(raw, Mapping):
        raise meta.invalid("data", raw, f"must be an object, not {meta.go_type(raw)}")
    data = _decoded(raw or {})
    for key in data:
        for msg in config_key_errors(key):
            errs.append(meta.invalid(f"data[{key}]", key, msg))
    if sum(len(v) for v in data.values()) > MAX_SECRET_SIZE:
        errs.append(ValidationError("data", f"Too long: may not be more than {MAX_SECRET_SIZE} bytes"))
    kind = obj.get("type") or ""
    annotations = md.get("annotations") or {}
    if kind == "kubernetes.io/service-account-token":
        if not annotations.get(SERVICE_ACCOUNT_NAME_KEY):
            errs.append(meta.required(f"metadata.annotations[{SERVICE_ACCOUNT_NAME_KEY}]"))
    elif kind in ("kubernetes.io/dockercfg", "kubernetes.io/dockerconfigjson"):
        key = ".dockercfg" if kind == "kubernetes.io/dockercfg" else ".dockerconfigjson"
        if key not in data:
            errs.append(meta.required(f"data[{key}]"))
        else:
            try:
                parsed = json.loads(data[key])
                if not isinstance(parsed, dict):
                    raise ValueError(f"json: cannot unmarshal {meta.go_type(parsed)} into Go value of type "
                                     "map[string]interface {}")
            except ValueError as err:
                errs.append(meta.invalid(f"data[{key}]", "<secret contents redacted>", str(err)))
    elif kind == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:
            errs.append(meta.required("data[username]"))
            errs.append(meta.required("data[password]"))
    elif kind == "kubernetes.io/ssh-auth":
        if not data.get("ssh-privatekey"):
            errs.append(meta.required("data[ssh-privatekey]"))
    elif kind == "kubernetes.io/tls":
        for key in ("tls.crt", "tls.key"):
            if key not in data:
                errs.append(meta.required(f"data[{key}]"))
    errs.raise_all()


def validate_secret_update(new: JSON, old: JSON) -> None:
    """ValidateSecretUpdate's transitions: the type is immutable, and so is an immutable secret."""
    errs = Errors()
    if (new.get("type") or "") != (old.get("type") or ""):
        errs.append(meta.invalid("type", new.get("type") or "", "field is immutable"))
    if old.get("immutable"):
        if not new.get("immutable"):
            errs.append(meta.forbidden("immutable", "field is immutable when `immutable` is set"))
        if (new.get("data") or {}) != (old.get("data") or {}):
            errs.append(meta.forbidden("data", "field is immutable when `immutable` is set"))
    errs.raise_all()


def hooks() -> dict[str, dict[str, Any]]:
    """Hook fields for nodeagent.store.kinds.KindRegistry.with_hooks."""
    return {"Secret": {"default": default_secret, "validate": validate_secret,
                       "validate_update": validate_secret_update}}
