"""Which kinds refuse an update without metadata.resourceVersion: the strategies whose
AllowUnconditionalUpdate is false in kube-apiserver v1.37.2 (pkg/registry/*/*/strategy.go,
apiextensions' customresourcedefinition), read off upstream's source for every served kind; the
catalog's resources carry it per apiVersion (DeviceTaintRule allows it in its older versions only)."""

from __future__ import annotations

from nodeagent.apiserver.catalog import builtin_resources
from nodeagent.kinds import BUILTIN

REFUSING = {"Lease", "CSINode", "CSIDriver", "CSIStorageCapacity", "VolumeAttachment", "PodDisruptionBudget",
            "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "PodCertificateRequest",
            "CustomResourceDefinition", "StorageVersionMigration", "RuntimeClass"}


def test_the_kinds_that_refuse() -> None:
    refusing = {k.kind for k in BUILTIN if k.unconditional_update is False}
    assert refusing == REFUSING


def test_device_taint_rules_by_version() -> None:
    got = {(r.api_version, r.unconditional_update) for r in builtin_resources() if r.kind == "DeviceTaintRule"}
    assert got == {("resource.k8s.io/v1", False), ("resource.k8s.io/v1beta2", True),
                   ("resource.k8s.io/v1alpha3", True)}
