"""The indexed-Job part of batch/v1 validateJobSpec: completionMode, backoffLimitPerIndex,
maxFailedIndexes, successPolicy and the podFailurePolicy rules' actions (FailIndex needs a per-index
backoff limit), with upstream's field paths and texts (pkg/apis/batch/validation).

Why a module: objects/workloads.py checks the counts and the template of every workload kind; these
rules belong to Jobs alone and are many. Errors go into the caller's ErrorList in upstream's order;
`backoffLimitPerIndex: Required` (declarative validation's, listed after the handwritten errors) is
returned separately for the caller to append last. Pure: no I/O.

Differences from upstream, on purpose: succeededIndexes is checked for its length and form
(intervals of non-negative integers in order, below completions) with one generic error text where
upstream names the exact parse failure.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from nodeagent.errors import ValidationError
from nodeagent.objects.common import Errors
from nodeagent.store import validation as meta

MAX_PARALLELISM_INDEXED = 100000  # maxParallelismForIndexedJob
MAX_FAILED_INDEXES = 100_000  # maxFailedIndexesForIndexedJob
COMPLETIONS_SOFT_LIMIT = 100_000  # completionsSoftLimit
PARALLELISM_HIGH_COMPLETIONS = 10_000  # parallelismLimitForHighCompletions
MAX_FAILED_INDEXES_HIGH_COMPLETIONS = 10_000  # maxFailedIndexesLimitForHighCompletions
MAX_SUCCESS_RULES = 20  # maxSuccessPolicyRule
MAX_SUCCEEDED_INDEXES_LENGTH = 64 * 1024  # maxJobSuccessPolicySucceededIndexesLimit
ACTIONS = ("Count", "FailIndex", "FailJob", "Ignore")  # sets.List(supportedPodFailurePolicyActions)
_INTERVAL = re.compile(r"^(\d+)(?:-(\d+))?$")


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _success_value(policy: Mapping[str, Any]) -> str:
    """The internal batch.SuccessPolicy as field.Error prints a struct in v1.37: its JSON without
    json tags (Go's field names and order; an absent pointer or slice is null)."""
    rules = policy.get("rules")
    internal = None if rules is None else [
        {"SucceededIndexes": r.get("succeededIndexes"), "SucceededCount": r.get("succeededCount")}
        for r in rules if isinstance(r, Mapping)]
    return json.dumps({"Rules": internal}, separators=(",", ":"))


def check_indexed(errs: Errors, spec: Mapping[str, Any], path: str) -> list[ValidationError]:
    """validateJobSpec's indexed-Job rules into `errs`; answers the declarative errors to list last."""
    late: list[ValidationError] = []
    per_index, max_failed = _int(spec.get("backoffLimitPerIndex")), _int(spec.get("maxFailedIndexes"))
    completions, parallelism = _int(spec.get("completions")), _int(spec.get("parallelism"))
    for key, value in (("backoffLimitPerIndex", per_index), ("maxFailedIndexes", max_failed)):
        if value is not None and value < 0:
            errs.append(ValidationError(f"{path}.{key}", f"Invalid value: {value}: must be greater than or equal to 0"))
    if max_failed is not None and per_index is None:
        late.append(meta.required(f"{path}.backoffLimitPerIndex", "when maxFailedIndexes is specified"))
    mode = spec.get("completionMode")
    if mode is not None and mode not in ("NonIndexed", "Indexed"):
        errs.append(meta.not_supported(f"{path}.completionMode", mode, ("NonIndexed", "Indexed"), ordered=True))
    if mode == "Indexed":
        if completions is None:
            errs.append(meta.required(f"{path}.completions", "when completion mode is Indexed"))
        if parallelism is not None and parallelism > MAX_PARALLELISM_INDEXED:
            errs.append(meta.invalid(f"{path}.parallelism", parallelism, "must be less than or equal to "
                                     f"{MAX_PARALLELISM_INDEXED} when completion mode is Indexed"))
        if completions is not None and max_failed is not None and max_failed > completions:
            errs.append(meta.invalid(f"{path}.maxFailedIndexes", max_failed,
                                     "must be less than or equal to completions"))
        if max_failed is not None and max_failed > MAX_FAILED_INDEXES:
            errs.append(meta.invalid(f"{path}.maxFailedIndexes", max_failed,
                                     f"must be less than or equal to {MAX_FAILED_INDEXES}"))
        if completions is not None and completions > COMPLETIONS_SOFT_LIMIT and per_index is not None:
            _high_completions(errs, path, parallelism, max_failed)
    else:
        for key, value in (("backoffLimitPerIndex", per_index), ("maxFailedIndexes", max_failed)):
            if value is not None:
                errs.append(meta.invalid(f"{path}.{key}", value, "requires indexed completion mode"))
    failure = spec.get("podFailurePolicy")
    if isinstance(failure, Mapping):
        for i, rule in enumerate(failure.get("rules") or ()):
            if isinstance(rule, Mapping):
                _check_action(errs, rule.get("action"), f"{path}.podFailurePolicy.rules[{i}].action", per_index)
    success = spec.get("successPolicy")
    if isinstance(success, Mapping):
        if mode != "Indexed":
            errs.append(ValidationError(f"{path}.successPolicy",
                                        f"Invalid value: {_success_value(success)}: requires indexed completion mode"))
        else:
            _check_success(errs, success, f"{path}.successPolicy", completions or 0)
    return late


def _high_completions(errs: Errors, path: str, parallelism: int | None, max_failed: int | None) -> None:
    above = f"when completions are above {COMPLETIONS_SOFT_LIMIT} and used with backoff limit per index"
    if max_failed is None:
        errs.append(meta.required(f"{path}.maxFailedIndexes",
                                  f"must be specified when completions is above {COMPLETIONS_SOFT_LIMIT}"))
    if parallelism is not None and parallelism > PARALLELISM_HIGH_COMPLETIONS:
        errs.append(meta.invalid(f"{path}.parallelism", parallelism,
                                 f"must be less than or equal to {PARALLELISM_HIGH_COMPLETIONS} {above}"))
    if max_failed is not None and max_failed > MAX_FAILED_INDEXES_HIGH_COMPLETIONS:
        errs.append(meta.invalid(f"{path}.maxFailedIndexes", max_failed,
                                 f"must be less than or equal to {MAX_FAILED_INDEXES_HIGH_COMPLETIONS} {above}"))


def _check_action(errs: Errors, action: Any, path: str, per_index: int | None) -> None:
    """validatePodFailurePolicyRule's action: required, one of ACTIONS, FailIndex only with a per-index limit."""
    if not action:
        errs.append(meta.required(path, "valid values: [" + " ".join(f'"{a}"' for a in ACTIONS) + "]"))
    elif action == "FailIndex":
        if per_index is None:
            errs.append(meta.invalid(path, action, "requires the backoffLimitPerIndex to be set"))
    elif action not in ACTIONS:
        errs.append(meta.not_supported(path, action, ACTIONS))


def _check_success(errs: Errors, policy: Mapping[str, Any], path: str, completions: int) -> None:
    """validateSuccessPolicy and each rule's validateSuccessPolicyRule."""
    rules = policy.get("rules") or []
    rules_path = f"{path}.rules"
    if not rules:
        errs.append(meta.required(rules_path,
                                  "at least one rules must be specified when the successPolicy is specified"))
    if len(rules) > MAX_SUCCESS_RULES:
        errs.append(ValidationError(rules_path, f"Too many: {len(rules)}: must have at most {MAX_SUCCESS_RULES} items"))
    for i, rule in enumerate(rules if isinstance(rules, list) else ()):
        if not isinstance(rule, Mapping):
            continue
        rule_path = f"{rules_path}[{i}]"
        count, indexes = _int(rule.get("succeededCount")), rule.get("succeededIndexes")
        if count is None and indexes is None:
            errs.append(meta.required(rule_path,
                                      "at least one of succeededCount or succeededIndexes must be specified"))
        total = 0
        if isinstance(indexes, str):
            if len(indexes) > MAX_SUCCEEDED_INDEXES_LENGTH:
                errs.append(ValidationError(f"{rule_path}.succeededIndexes",
                                            f"Too long: may not be more than {MAX_SUCCEEDED_INDEXES_LENGTH} bytes"))
            parsed = _indexes_total(indexes, completions)
            if parsed is None:
                errs.append(meta.invalid(f"{rule_path}.succeededIndexes", indexes,
                                         "error parsing succeededIndexes: invalid format"))
            else:
                total = parsed
        if count is not None:
            count_path = f"{rule_path}.succeededCount"
            if count < 0:
                errs.append(ValidationError(count_path, f"Invalid value: {count}: must be greater than or equal to 0"))
            if count > completions:
                errs.append(meta.invalid(count_path, count, f"must be less than or equal to {completions} (the "
                                         "number of specified completions)"))
            if indexes is not None and count > total:
                errs.append(meta.invalid(count_path, count, f"must be less than or equal to {total} (the number "
                                         "of indexes in the specified succeededIndexes field)"))


def _indexes_total(text: str, completions: int) -> int | None:
    """validateIndexesFormat's count of `0,2-4,...` (ordered, below completions); None when malformed."""
    total, previous = 0, -1
    for part in text.split(",") if text else ():
        match = _INTERVAL.match(part)
        if not match:
            return None
        low = int(match.group(1))
        high = int(match.group(2)) if match.group(2) is not None else low
        if low > high or low <= previous or high >= completions:
            return None
        total += high - low + 1
        previous = high
    return total
