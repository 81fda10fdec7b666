"""kube-apiserver's ServiceAccount admission on pod creates (objects/serviceaccount.py), case by case from
plugin/pkg/admission/serviceaccount v1.37.2."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from nodeagent.errors import ValidationError
from nodeagent.objects import serviceaccount as sa

MOUNT = {"name": "kube-api-access-abcde", "readOnly": True, "mountPath": sa.MOUNT_PATH}


def admit(spec: dict[str, Any], accounts: Mapping[str, Mapping[str, Any]] | None = None,
          annotations: Mapping[str, str] | None = None, strict: bool = True) -> dict[str, Any]:
    known = {"default": {"metadata": {"name": "default"}}} if accounts is None else accounts
    pod: dict[str, Any] = {"metadata": {"name": "p", "annotations": dict(annotations or {})}, "spec": spec}
    sa.admit_create(pod, "ns", lambda ns, name: known.get(name) if ns == "ns" else None,
                    lambda prefix: prefix + "abcde", strict=strict)
    return dict(pod["spec"])


def test_the_default_account_and_its_token_volume() -> None:
    spec = admit({"initContainers": [{"name": "i"}], "containers": [{"name": "c"}, {"name": "d"}]})
    assert (spec["serviceAccountName"], spec["serviceAccount"]) == ("default", "default")
    assert spec["volumes"] == [{"name": "kube-api-access-abcde", "projected": sa.token_volume_source()}]
    assert [c["volumeMounts"] for c in (*spec["initContainers"], *spec["containers"])] == [[MOUNT]] * 3
    assert spec["volumes"][0]["projected"]["sources"][0] == {
        "serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}


def test_a_container_with_its_own_mount_at_the_path_keeps_it() -> None:
    own = {"name": "mine", "mountPath": sa.MOUNT_PATH}
    spec = admit({"containers": [{"name": "c", "volumeMounts": [own]}]})
    assert spec["containers"][0]["volumeMounts"] == [own] and "volumes" not in spec


def test_an_existing_kube_api_access_volume_is_reused() -> None:
    vol = {"name": "kube-api-access-zzzzz", "emptyDir": {}}
    spec = admit({"volumes": [vol], "containers": [{"name": "c"}]})
    assert spec["volumes"] == [vol]
    assert spec["containers"][0]["volumeMounts"][0]["name"] == "kube-api-access-zzzzz"


@pytest.mark.parametrize(("pod_says", "account_says", "mounted"), [
    (None, None, True), (False, None, False), (None, False, False), (True, False, True), (False, True, False)])
def test_automount_the_pods_preference_then_the_accounts(pod_says: bool | None, account_says: bool | None,
                                                         mounted: bool) -> None:
    account: dict[str, Any] = {"metadata": {"name": "default"}}
    if account_says is not None:
        account["automountServiceAccountToken"] = account_says
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    if pod_says is not None:
        spec["automountServiceAccountToken"] = pod_says
    assert ("volumes" in admit(spec, {"default": account})) is mounted


def test_image_pull_secrets_of_the_account_when_the_pod_has_none() -> None:
    account = {"metadata": {"name": "builder"}, "imagePullSecrets": [{"name": "reg"}]}
    spec = admit({"serviceAccountName": "builder", "containers": []}, {"builder": account})
    assert spec["imagePullSecrets"] == [{"name": "reg"}] and "serviceAccount" not in spec


def test_a_missing_account_is_forbidden_unless_lenient() -> None:
    with pytest.raises(ValidationError) as err:
        admit({"containers": []}, {})
    assert str(err.value) == ('pods "p" is forbidden: error looking up service account ns/default: '
                              'serviceaccount "default" not found')
    assert admit({"containers": []}, {}, strict=False) == {"containers": []}


@pytest.mark.parametrize(("spec", "text"), [
    ({"serviceAccountName": "x"}, "a mirror pod may not reference service accounts"),
    ({"volumes": [{"name": "s", "secret": {"secretName": "s"}}]}, "a mirror pod may not reference secrets"),
    ({"containers": [{"name": "c", "env": [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}]},
     "a mirror pod may not reference secrets"),
    ({"volumes": [{"name": "t", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}}]},
     "a mirror pod may not use ServiceAccountToken volume projections"),
])
def test_mirror_pods_are_not_changed_and_may_not_reference(spec: dict[str, Any], text: str) -> None:
    mirror = {sa.MIRROR_ANNOTATION: "hash"}
    assert admit({"containers": [{"name": "c"}]}, annotations=mirror) == {"containers": [{"name": "c"}]}
    with pytest.raises(ValidationError) as err:
        admit(spec, annotations=mirror)
    assert str(err.value) == f'pods "p" is forbidden: {text}'
