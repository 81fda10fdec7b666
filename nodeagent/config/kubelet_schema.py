"""Every KubeletConfiguration v1beta1 field of the emulated release, declared once with its Go type.

Why: a real kubelet's own config file must load as it is (nodeagent is a stand-in for that
kubelet), so every field of `k8s.io/kubelet/config/v1beta1.KubeletConfiguration` at v0.37.2 is
accepted, and each is type-checked as Go's decoder would (a string where an int32 belongs is
an error, an int32 out of range too, an unknown key in a nested struct too). The fields
nodeagent acts on are then parsed again with their semantics by kubelet.py; the others are
accepted, listed by `check-config` and logged once at start (`ignored_fields`).

This module is data plus one checker: it does no semantic validation, reads no file, and
never raises (it returns every error it finds, so the caller reports them all at once).
tests/unit/config/test_kubelet_schema.py compares the table with upstream's types.go when the
Go module cache holds it.

Intended differences from the kubelet's decoder, with their reasons:
- An unknown field is an error. The kubelet's v1beta1 decoding falls back to a lenient decode
  and only logs it; nodeagent refuses, so that a typo never silently does nothing on a node
  whose whole point is to show what a kubelet would do with that config.
- A duration also accepts a number of seconds (nodeagent's own configs have always allowed it).
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from dataclasses import dataclass

from nodeagent.config.fields import parse_duration, type_name
from nodeagent.errors import ConfigError
from nodeagent.util import quantity

_INT_RANGES = {
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint32": (0, 2**32 - 1),
}


@dataclass(frozen=True)
class Scalar:
    """A Go scalar: bool, int32, int64, uint32, float64, string, duration (metav1.Duration),
    flushFrequency (logsapi.TimeOrMetaDuration: duration text or integer nanoseconds),
    quantity (resource.Quantity) or time (metav1.Time, RFC 3339)."""

    go: str


@dataclass(frozen=True)
class ListOf:
    item: Spec


@dataclass(frozen=True)
class MapOf:
    """map[string]V."""

    value: Spec


@dataclass(frozen=True)
class Struct:
    fields: Mapping[str, Spec]


Spec = Scalar | ListOf | MapOf | Struct

BOOL, INT32, INT64, UINT32 = Scalar("bool"), Scalar("int32"), Scalar("int64"), Scalar("uint32")
FLOAT64 = Scalar("float64")
STRING, DURATION, QUANTITY, TIME = Scalar("string"), Scalar("duration"), Scalar("quantity"), Scalar("time")
FLUSH = Scalar("flushFrequency")
STRINGS = ListOf(STRING)
STRING_MAP = MapOf(STRING)

_OUTPUT_ROUTING = Struct({"splitStream": BOOL, "infoBufferSize": QUANTITY})

# k8s.io/component-base/logs/api/v1.LoggingConfiguration
LOGGING = Struct({
    "format": STRING,
    "flushFrequency": FLUSH,
    "verbosity": UINT32,
    "vmodule": ListOf(Struct({"filePattern": STRING, "verbosity": UINT32})),
    "options": Struct({"text": _OUTPUT_ROUTING, "json": _OUTPUT_ROUTING}),
})

# k8s.io/kubelet/config/v1beta1.KubeletConfiguration at v0.37.2, in declaration order.
KUBELET_CONFIGURATION: Mapping[str, Spec] = {
    "enableServer": BOOL,
    "staticPodPath": STRING,
    "podLogsDir": STRING,
    "syncFrequency": DURATION,
    "fileCheckFrequency": DURATION,
    "httpCheckFrequency": DURATION,
    "staticPodURL": STRING,
    "staticPodURLHeader": MapOf(STRINGS),
    "address": STRING,
    "port": INT32,
    "readOnlyPort": INT32,
    "tlsCertFile": STRING,
    "tlsPrivateKeyFile": STRING,
    "tlsCipherSuites": STRINGS,
    "tlsCurvePreferences": ListOf(INT32),
    "tlsMinVersion": STRING,
    "rotateCertificates": BOOL,
    "serverTLSBootstrap": BOOL,
    "authentication": Struct({
        "x509": Struct({"clientCAFile": STRING}),
        "webhook": Struct({"enabled": BOOL, "cacheTTL": DURATION}),
        "anonymous": Struct({"enabled": BOOL}),
    }),
    "authorization": Struct({
        "mode": STRING,
        "webhook": Struct({"cacheAuthorizedTTL": DURATION, "cacheUnauthorizedTTL": DURATION}),
    }),
    "registryPullQPS": INT32,
    "registryBurst": INT32,
    "imagePullCredentialsVerificationPolicy": STRING,
    "preloadedImagesVerificationAllowlist": STRINGS,
    "eventRecordQPS": INT32,
    "eventBurst": INT32,
    "enableDebuggingHandlers": BOOL,
    "enableContentionProfiling": BOOL,
    "healthzPort": INT32,
    "healthzBindAddress": STRING,
    "oomScoreAdj": INT32,
    "clusterDomain": STRING,
    "clusterDNS": STRINGS,
    "streamingConnectionIdleTimeout": DURATION,
    "nodeStatusUpdateFrequency": DURATION,
    "nodeStatusReportFrequency": DURATION,
    "nodeLeaseDurationSeconds": INT32,
    "imageMinimumGCAge": DURATION,
    "imageMaximumGCAge": DURATION,
    "imageGCHighThresholdPercent": INT32,
    "imageGCLowThresholdPercent": INT32,
    "volumeStatsAggPeriod": DURATION,
    "kubeletCgroups": STRING,
    "systemCgroups": STRING,
    "cgroupRoot": STRING,
    "cgroupsPerQOS": BOOL,
    "cgroupDriver": STRING,
    "cpuManagerPolicy": STRING,
    "singleProcessOOMKill": BOOL,
    "cpuManagerPolicyOptions": STRING_MAP,
    "cpuManagerReconcilePeriod": DURATION,
    "memoryManagerPolicy": STRING,
    "topologyManagerPolicy": STRING,
    "topologyManagerScope": STRING,
    "topologyManagerPolicyOptions": STRING_MAP,
    "qosReserved": STRING_MAP,
    "runtimeRequestTimeout": DURATION,
    "hairpinMode": STRING,
    "maxPods": INT32,
    "podCIDR": STRING,
    "podPidsLimit": INT64,
    "resolvConf": STRING,
    "runOnce": BOOL,
    "cpuCFSQuota": BOOL,
    "cpuCFSQuotaPeriod": DURATION,
    "nodeStatusMaxImages": INT32,
    "maxOpenFiles": INT64,
    "contentType": STRING,
    "kubeAPIQPS": INT32,
    "kubeAPIBurst": INT32,
    "serializeImagePulls": BOOL,
    "maxParallelImagePulls": INT32,
    "evictionHard": STRING_MAP,
    "evictionSoft": STRING_MAP,
    "evictionSoftGracePeriod": STRING_MAP,
    "evictionPressureTransitionPeriod": DURATION,
    "evictionMaxPodGracePeriod": INT32,
    "evictionMinimumReclaim": STRING_MAP,
    "mergeDefaultEvictionSettings": BOOL,
    "podsPerCore": INT32,
    "enableControllerAttachDetach": BOOL,
    "protectKernelDefaults": BOOL,
    "makeIPTablesUtilChains": BOOL,
    "iptablesMasqueradeBit": INT32,
    "iptablesDropBit": INT32,
    "featureGates": MapOf(BOOL),
    "failSwapOn": BOOL,
    "memorySwap": Struct({"swapBehavior": STRING}),
    "containerLogMaxSize": STRING,
    "containerLogMaxFiles": INT32,
    "containerLogMaxWorkers": INT32,
    "containerLogMonitorInterval": DURATION,
    "configMapAndSecretChangeDetectionStrategy": STRING,
    "systemReserved": STRING_MAP,
    "kubeReserved": STRING_MAP,
    "reservedSystemCPUs": STRING,
    "showHiddenMetricsForVersion": STRING,
    "systemReservedCgroup": STRING,
    "kubeReservedCgroup": STRING,
    "enforceNodeAllocatable": STRINGS,
    "allowedUnsafeSysctls": STRINGS,
    "defaultPodSysctls": STRING_MAP,
    "volumePluginDir": STRING,
    "providerID": STRING,
    "kernelMemcgNotification": BOOL,
    "logging": LOGGING,
    "enableSystemLogHandler": BOOL,
    "enableSystemLogQuery": BOOL,
    "shutdownGracePeriod": DURATION,
    "shutdownGracePeriodCriticalPods": DURATION,
    "shutdownGracePeriodByPodPriority": ListOf(Struct({"priority": INT32, "shutdownGracePeriodSeconds": INT64})),
    "crashLoopBackOff": Struct({"maxContainerRestartPeriod": DURATION}),
    "reservedMemory": ListOf(Struct({"numaNode": INT32, "limits": MapOf(QUANTITY)})),
    "enableProfilingHandler": BOOL,
    "enableDebugFlagsHandler": BOOL,
    "seccompDefault": BOOL,
    "memoryThrottlingFactor": FLOAT64,
    "memoryReservationPolicy": STRING,
    # core/v1.Taint
    "registerWithTaints": ListOf(Struct({"key": STRING, "value": STRING, "effect": STRING, "timeAdded": TIME})),
    "registerNode": BOOL,
    "tracing": Struct({"endpoint": STRING, "samplingRatePerMillion": INT32}),
    "localStorageCapacityIsolation": BOOL,
    "containerRuntimeEndpoint": STRING,
    "imageServiceEndpoint": STRING,
    "failCgroupV1": BOOL,
    "userNamespaces": Struct({"idsPerPod": INT64}),
}

_RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)")


def _scalar(value: object, spec: Scalar, path: str) -> str | None:
    """The error of one scalar value, or None."""
    go = spec.go
    if go == "bool":
        return None if isinstance(value, bool) else f"{path}: expected boolean, got {type_name(value)}"
    if go in _INT_RANGES:
        if isinstance(value, bool) or not isinstance(value, int):
            return f"{path}: expected integer, got {type_name(value)}"
        lo, hi = _INT_RANGES[go]
        return None if lo <= value <= hi else f"{path}: Invalid value: {value}: out of range for {go}"
    if go == "float64":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return None if ok else f"{path}: expected number, got {type_name(value)}"
    if go == "string":
        return None if isinstance(value, str) else f"{path}: expected string, got {type_name(value)}"
    if go == "flushFrequency" and isinstance(value, int) and not isinstance(value, bool):
        return None  # integer nanoseconds, as TimeOrMetaDuration unmarshals a number
    if go in ("duration", "flushFrequency"):
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            return f"{path}: expected duration string, got {type_name(value)}"
        try:
            parse_duration(value, path)
        except ConfigError as err:
            return str(err)
        return None
    if go == "quantity":
        try:
            quantity.parse(value)
        except quantity.QuantityError as err:
            return f"{path}: {err}"
        return None
    if go == "time":
        if isinstance(value, datetime.datetime) or (isinstance(value, str) and _RFC3339.fullmatch(value)):
            return None
        return f"{path}: expected an RFC 3339 time, got {type_name(value)}"
    raise AssertionError(f"unknown Go type {go}")  # a mistake in the table above


def check(value: object, spec: Spec, path: str) -> list[str]:
    """Every type error under `value` (None, Go's null, is always accepted: the field keeps its default)."""
    if value is None:
        return []
    if isinstance(spec, Scalar):
        error = _scalar(value, spec, path)
        return [error] if error else []
    if isinstance(spec, ListOf):
        if not isinstance(value, list):
            return [f"{path}: expected array, got {type_name(value)}"]
        return [e for i, item in enumerate(value) for e in check(item, spec.item, f"{path}[{i}]")]
    if not isinstance(value, dict):
        return [f"{path}: expected object, got {type_name(value)}"]
    if isinstance(spec, MapOf):
        return [e for k, v in value.items() for e in check(v, spec.value, f'{path}["{k}"]')]
    errors: list[str] = []
    for key, item in value.items():
        sub = spec.fields.get(str(key))
        if sub is None:
            errors.append(f"{path}.{key}: unknown field")
        else:
            errors.extend(check(item, sub, f"{path}.{key}"))
    return errors


def ignored_fields(doc: Mapping[str, object], honoured: frozenset[str] | set[str]) -> tuple[str, ...]:
    """The fields set in the document (not null) that nodeagent accepts but does not act on, in
    upstream's declaration order: what `check-config` lists and the daemon logs once at start."""
    return tuple(k for k in KUBELET_CONFIGURATION if k not in honoured and doc.get(k) is not None)
