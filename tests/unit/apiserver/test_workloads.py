"""The workload kinds (apps/v1, batch/v1) through the generic registry, in process: defaults as
upstream's defaulting writes them, validation with kube-apiserver's paths and messages, the
status and scale subresources, generation, and the printers' cells (kubectl get)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from nodeagent.apiserver import tables
from nodeagent.apiserver.catalog import Catalog, Resource, builtin_resources
from nodeagent.apiserver.errors import APIError
from nodeagent.apiserver.options import DeleteOptions, WriteOptions
from nodeagent.apiserver.registry import APPLY_PATCH, JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH, Registry
from nodeagent.apiserver.schema.builtin import builtin_definitions
from nodeagent.apiserver.strategies import builtin_strategies
from nodeagent.objects.workloads import selector_string
from nodeagent.store import ObjectStore, builtin_kinds
from nodeagent.util.clock import FakeClock

Obj = dict[str, Any]
CATALOG = Catalog(builtin_resources())
DEFS = builtin_definitions()
W = WriteOptions()


def res(plural: str, group: str) -> Resource:
    found = CATALOG.find(group, "v1", plural)
    assert found is not None
    return found


DEPLOY, RS, STS, DS = (res(p, "apps") for p in ("deployments", "replicasets", "statefulsets", "daemonsets"))
REVS = res("controllerrevisions", "apps")
JOBS, CRONJOBS = res("jobs", "batch"), res("cronjobs", "batch")


@pytest.fixture
def reg() -> Registry:
    clock = FakeClock()
    store = ObjectStore.memory(builtin_kinds(), clock)
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    return Registry(store, Catalog(builtin_resources()), DEFS, builtin_strategies(), clock)


def failure(call: Callable[[], object]) -> APIError:
    with pytest.raises(APIError) as err:
        call()
    return err.value


def template(labels: dict[str, str] | None = None, **spec: Any) -> Obj:
    return {"metadata": {"labels": labels if labels is not None else {"app": "web"}},
            "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}], **spec}}


def deployment(name: str = "web", replicas: int | None = 3, **spec: Any) -> Obj:
    body: Obj = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
                 "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": template(), **spec}}
    if replicas is not None:
        body["spec"]["replicas"] = replicas
    return body


def workload(kind: str, **spec: Any) -> Obj:
    base: Obj = {"selector": {"matchLabels": {"app": "web"}}, "template": template()}
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": kind.lower()}, "spec": {**base, **spec}}


def job(name: str = "pi", **spec: Any) -> Obj:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"template": template(restartPolicy="Never"), **spec}}


def cron_job(name: str = "tick", **spec: Any) -> Obj:
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name},
            "spec": {"schedule": "*/5 * * * *",
                     "jobTemplate": {"spec": {"template": template(restartPolicy="OnFailure")}}, **spec}}


# --- defaults and create ---------------------------------------------------------------------------------


def test_deployment_create_writes_upstreams_defaults_and_a_zero_status(reg: Registry) -> None:
    out = reg.create(DEPLOY, "default", deployment(replicas=None), W).object
    spec = out["spec"]
    assert spec["replicas"] == 1 and spec["revisionHistoryLimit"] == 10 and spec["progressDeadlineSeconds"] == 600
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}
    pod = spec["template"]["spec"]
    assert (pod["restartPolicy"], pod["dnsPolicy"], pod["schedulerName"], pod["terminationGracePeriodSeconds"],
            pod["securityContext"]) == ("Always", "ClusterFirst", "default-scheduler", 30, {})
    assert pod["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert pod["containers"][0]["terminationMessagePath"] == "/dev/termination-log"
    assert out["status"] == {} and out["metadata"]["generation"] == 1


def test_a_client_status_is_dropped_on_create_and_kept_by_a_spec_write(reg: Registry) -> None:
    body = deployment()
    body["status"] = {"replicas": 7}
    assert reg.create(DEPLOY, "default", body, W).object["status"] == {}
    reg.update(DEPLOY, "default", "web", "status", {**copy.deepcopy(reg.get(DEPLOY, "default", "web")),
                                                    "status": {"replicas": 3, "observedGeneration": 1}}, W)
    changed = copy.deepcopy(reg.get(DEPLOY, "default", "web"))
    changed["spec"]["replicas"] = 4
    changed["status"] = {"replicas": 99}
    out = reg.update(DEPLOY, "default", "web", "", changed, W).object
    assert out["status"] == {"replicas": 3, "observedGeneration": 1}
    assert out["metadata"]["generation"] == 2


def test_each_kind_gets_its_defaults(reg: Registry) -> None:
    sts = reg.create(STS, "default", workload("StatefulSet"), W).object
    assert sts["spec"]["podManagementPolicy"] == "OrderedReady"
    assert sts["spec"]["updateStrategy"] == {"type": "RollingUpdate",
                                             "rollingUpdate": {"partition": 0, "maxUnavailable": 1}}
    assert sts["spec"]["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain", "whenScaled": "Retain"}
    assert sts["status"] == {"replicas": 0, "availableReplicas": 0}
    assert sts["spec"]["serviceName"] == ""  # a Go string without omitempty
    ds = reg.create(DS, "default", workload("DaemonSet"), W).object
    assert ds["spec"]["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1,
                                                                                        "maxSurge": 0}}
    assert ds["status"]["desiredNumberScheduled"] == 0
    rs = reg.create(RS, "default", workload("ReplicaSet"), W).object
    assert rs["spec"]["replicas"] == 1 and rs["status"] == {"replicas": 0}
    j = reg.create(JOBS, "default", job(), W).object["spec"]
    assert (j["completions"], j["parallelism"], j["backoffLimit"], j["completionMode"], j["suspend"],
            j["podReplacementPolicy"], j["manualSelector"]) == (1, 1, 6, "NonIndexed", False, "TerminatingOrFailed",
                                                               False)
    cj = reg.create(CRONJOBS, "default", cron_job(), W).object["spec"]
    assert (cj["concurrencyPolicy"], cj["suspend"], cj["successfulJobsHistoryLimit"],
            cj["failedJobsHistoryLimit"]) == ("Allow", False, 3, 1)
    # SetObjectDefaults_CronJob does not run SetDefaults_Job on the template: the Job's create does
    assert set(cj["jobTemplate"]["spec"]) == {"template"}


# --- validation ------------------------------------------------------------------------------------------


def test_deployment_validation_messages_are_upstreams(reg: Registry) -> None:
    err = failure(lambda: reg.create(DEPLOY, "default", deployment(replicas=-1), W))
    assert err.code == 422
    assert err.message == ('Deployment.apps "web" is invalid: spec.replicas: Invalid value: -1: must be greater '
                           "than or equal to 0")
    body = deployment()
    body["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    err = failure(lambda: reg.create(DEPLOY, "default", body, W))
    assert err.message == ('Deployment.apps "web" is invalid: spec.template.metadata.labels: Invalid value: '
                           '{"app":"other"}: `selector` does not match template `labels`')
    body = deployment()
    del body["spec"]["selector"]
    err = failure(lambda: reg.create(DEPLOY, "default", body, W))
    assert err.message == ('Deployment.apps "web" is invalid: [spec.selector: Required value, '
                           'spec.template.metadata.labels: Invalid value: {"app":"web"}: `selector` does not match '
                           "template `labels`]")
    body = deployment()
    body["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    err = failure(lambda: reg.create(DEPLOY, "default", body, W))
    assert err.message == ('Deployment.apps "web" is invalid: spec.template.spec.restartPolicy: Unsupported value: '
                           '"Never": supported values: "Always"')


def test_the_template_is_checked_by_the_pod_parser_under_the_templates_path(reg: Registry) -> None:
    body = deployment()
    body["spec"]["template"]["spec"]["containers"] = []
    err = failure(lambda: reg.create(DEPLOY, "default", body, W))
    assert err.code == 422 and "spec.template.spec.containers" in err.message


def test_strategy_and_deadline_checks(reg: Registry) -> None:
    body = deployment(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0}})
    err = failure(lambda: reg.create(DEPLOY, "default", body, W))
    assert err.message == ('Deployment.apps "web" is invalid: spec.strategy.rollingUpdate.maxUnavailable: Invalid '
                           "value: 0: may not be 0 when `maxSurge` is 0")
    body = deployment(minReadySeconds=700)
    err = failure(lambda: reg.create(DEPLOY, "default", body, W))
    assert err.message == ('Deployment.apps "web" is invalid: spec.progressDeadlineSeconds: Invalid value: 600: '
                           "must be greater than minReadySeconds")


def test_the_selector_is_immutable(reg: Registry) -> None:
    reg.create(DEPLOY, "default", deployment(), W)
    changed = copy.deepcopy(reg.get(DEPLOY, "default", "web"))
    changed["spec"]["selector"] = {"matchLabels": {"app": "web", "tier": "x"}}
    changed["spec"]["template"]["metadata"]["labels"] = {"app": "web", "tier": "x"}
    err = failure(lambda: reg.update(DEPLOY, "default", "web", "", changed, W))
    assert err.code == 422 and "spec.selector: Invalid value: " in err.message
    assert err.message.endswith("field is immutable")


def test_a_job_selects_its_pods_by_its_uid_unless_manual(reg: Registry) -> None:
    out = reg.create(JOBS, "default", job(), W).object
    uid = out["metadata"]["uid"]
    assert out["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert out["spec"]["template"]["metadata"]["labels"] == {
        "app": "web", "job-name": "pi", "batch.kubernetes.io/job-name": "pi", "controller-uid": uid,
        "batch.kubernetes.io/controller-uid": uid}
    # a Job without labels takes its template's, the generated ones included (as kube-apiserver stores it)
    assert out["metadata"]["labels"] == out["spec"]["template"]["metadata"]["labels"]
    manual = reg.create(JOBS, "default", job("manual", manualSelector=True,
                                             selector={"matchLabels": {"app": "web"}}), W).object
    assert manual["spec"]["selector"] == {"matchLabels": {"app": "web"}}
    err = failure(lambda: reg.create(JOBS, "default", job("nosel", manualSelector=True), W))
    assert err.message == ('Job.batch "nosel" is invalid: [spec.selector: Required value, '
                           'spec.template.metadata.labels: Invalid value: {"app":"web"}: `selector` does not match '
                           "template `labels`]")


def test_job_and_daemonset_restart_policies(reg: Registry) -> None:
    err = failure(lambda: reg.create(JOBS, "default", job(template=template()), W))
    assert err.message == ('Job.batch "pi" is invalid: spec.template.spec.restartPolicy: Required value: valid '
                           'values: "OnFailure", "Never"')
    body = workload("DaemonSet")
    body["spec"]["template"]["spec"]["activeDeadlineSeconds"] = 5
    err = failure(lambda: reg.create(DS, "default", body, W))
    assert err.message == ('DaemonSet.apps "daemonset" is invalid: spec.template.spec.activeDeadlineSeconds: '
                           "Forbidden: activeDeadlineSeconds in DaemonSet is not Supported")


def test_status_counters_may_not_be_negative(reg: Registry) -> None:
    reg.create(RS, "default", workload("ReplicaSet"), W)
    cur = copy.deepcopy(reg.get(RS, "default", "replicaset"))
    cur["status"] = {"replicas": -1}
    err = failure(lambda: reg.update(RS, "default", "replicaset", "status", cur, W))
    assert err.message == ('ReplicaSet.apps "replicaset" is invalid: status.replicas: Invalid value: -1: must be '
                           "greater than or equal to 0")


def test_controller_revision_data_is_immutable(reg: Registry) -> None:
    rev = {"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": {"name": "web-1"},
           "data": {"spec": {"template": {}}}, "revision": 1}
    assert "generation" not in reg.create(REVS, "default", rev, W).object["metadata"]  # its strategy sets none
    changed = copy.deepcopy(reg.get(REVS, "default", "web-1"))
    changed["revision"] = 2
    assert "generation" not in reg.update(REVS, "default", "web-1", "", changed, W).object["metadata"]
    changed = copy.deepcopy(reg.get(REVS, "default", "web-1"))
    changed["data"] = {"other": True}
    err = failure(lambda: reg.update(REVS, "default", "web-1", "", changed, W))
    assert err.code == 422 and "data: Invalid value: " in err.message and err.message.endswith("field is immutable")


# --- the scale subresource -------------------------------------------------------------------------------


def test_scale_reads_and_writes_spec_replicas(reg: Registry) -> None:
    created = reg.create(DEPLOY, "default", deployment(), W).object
    scale = reg.get_scale(DEPLOY, "default", "web")
    assert scale == {"kind": "Scale", "apiVersion": "autoscaling/v1",
                     "metadata": {k: created["metadata"][k] for k in ("name", "namespace", "uid", "resourceVersion",
                                                                      "creationTimestamp")},
                     "spec": {"replicas": 3}, "status": {"replicas": 0, "selector": "app=web"}}
    out = reg.patch_scale(DEPLOY, "default", "web", MERGE_PATCH, {"spec": {"replicas": 5}}, W)
    assert out["spec"] == {"replicas": 5}
    stored = reg.get(DEPLOY, "default", "web")
    assert stored["spec"]["replicas"] == 5 and stored["metadata"]["generation"] == 2
    managers = [(m["manager"], m.get("subresource")) for m in stored["metadata"]["managedFields"]]
    # the /scale writer's entry has no time (ScaleHandler.ToParent), so it sorts before the timed Update entries
    assert managers[0][1] == "scale" and [sub for _, sub in managers].count("scale") == 1
    out = reg.patch_scale(DEPLOY, "default", "web", JSON_PATCH,
                          [{"op": "replace", "path": "/spec/replicas", "value": 2}], W)
    assert out["spec"] == {"replicas": 2}
    out = reg.patch_scale(DEPLOY, "default", "web", STRATEGIC_PATCH, {"spec": {"replicas": 0}}, W)
    assert out["spec"] == {} and reg.get(DEPLOY, "default", "web")["spec"]["replicas"] == 0


def test_scale_update_checks_replicas_and_the_resource_version(reg: Registry) -> None:
    reg.create(RS, "default", workload("ReplicaSet", replicas=2), W)
    scale = reg.get_scale(RS, "default", "replicaset")
    scale["spec"]["replicas"] = -2
    err = failure(lambda: reg.update_scale(RS, "default", "replicaset", scale, W))
    assert err.code == 422
    assert err.message == ('Scale.autoscaling "replicaset" is invalid: spec.replicas: Invalid value: -2: must be '
                           "greater than or equal to 0")
    scale["spec"]["replicas"] = 4
    assert reg.update_scale(RS, "default", "replicaset", scale, W)["spec"]["replicas"] == 4
    err = failure(lambda: reg.update_scale(RS, "default", "replicaset", scale, W))  # stale resourceVersion
    assert err.code == 409
    err = failure(lambda: reg.patch_scale(RS, "default", "replicaset", APPLY_PATCH, {}, W))
    assert err.code == 415
    err = failure(lambda: reg.get_scale(RS, "default", "missing"))
    assert err.code == 404 and err.message == 'replicasets.apps "missing" not found'


def test_scale_dry_run_changes_nothing(reg: Registry) -> None:
    reg.create(STS, "default", workload("StatefulSet", replicas=1), W)
    out = reg.patch_scale(STS, "default", "statefulset", MERGE_PATCH, {"spec": {"replicas": 3}},
                          WriteOptions(dry_run=True))
    assert out["spec"] == {"replicas": 3}
    assert reg.get(STS, "default", "statefulset")["spec"]["replicas"] == 1


def test_delete(reg: Registry) -> None:
    reg.create(CRONJOBS, "default", cron_job(), W)
    reg.delete(CRONJOBS, "default", "tick", DeleteOptions())
    assert failure(lambda: reg.get(CRONJOBS, "default", "tick")).code == 404


# --- printers --------------------------------------------------------------------------------------------


def _cells(reg: Registry, resource: Resource, name: str) -> list[Any]:
    obj = reg.get(resource, "default", name)
    return list(tables.table(resource, [obj], now=reg.clock.now() + 65)["rows"][0]["cells"])


def test_printers_show_upstreams_cells(reg: Registry) -> None:
    reg.create(DEPLOY, "default", deployment(), W)
    assert _cells(reg, DEPLOY, "web") == ["web", "0/3", 0, 0, "65s", "main", "nginx:1.25", "app=web"]
    reg.create(RS, "default", workload("ReplicaSet", replicas=2), W)
    assert _cells(reg, RS, "replicaset") == ["replicaset", 2, 0, 0, "65s", "main", "nginx:1.25", "app=web"]
    reg.create(STS, "default", workload("StatefulSet"), W)
    assert _cells(reg, STS, "statefulset") == ["statefulset", "0/1", "65s", "main", "nginx:1.25"]
    reg.create(DS, "default", workload("DaemonSet"), W)
    assert _cells(reg, DS, "daemonset") == ["daemonset", 0, 0, 0, 0, 0, "<none>", "65s", "main", "nginx:1.25",
                                            "app=web"]
    uid = reg.create(JOBS, "default", job(), W).object["metadata"]["uid"]
    assert _cells(reg, JOBS, "pi") == ["pi", "Running", "0/1", "", "65s", "main", "nginx:1.25",
                                       f"batch.kubernetes.io/controller-uid={uid}"]
    reg.create(CRONJOBS, "default", cron_job(), W)
    assert _cells(reg, CRONJOBS, "tick") == ["tick", "*/5 * * * *", "<none>", "False", 0, "<none>", "65s", "main",
                                             "nginx:1.25", "<none>"]
    rev = {"apiVersion": "apps/v1", "kind": "ControllerRevision",
           "metadata": {"name": "web-1", "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet",
                                                              "name": "web", "uid": "u", "controller": True}]},
           "data": {}, "revision": 1}
    reg.create(REVS, "default", rev, W)
    assert _cells(reg, REVS, "web-1") == ["web-1", "daemonset.apps/web", 1, "65s"]


def test_job_status_column_follows_the_conditions(reg: Registry) -> None:
    reg.create(JOBS, "default", job(), W)
    cur = copy.deepcopy(reg.get(JOBS, "default", "pi"))
    cur["status"] = {"conditions": [{"type": "Complete", "status": "True"}], "succeeded": 1,
                     "startTime": "2026-01-01T00:00:00Z", "completionTime": "2026-01-01T00:01:30Z"}
    reg.update(JOBS, "default", "pi", "status", cur, W)
    assert _cells(reg, JOBS, "pi")[1:4] == ["Complete", "1/1", "90s"]


def test_selector_string_is_labels_selector_string() -> None:
    assert selector_string({"matchLabels": {"b": "2", "a": "1"},
                            "matchExpressions": [{"key": "c", "operator": "In", "values": ["y", "x"]},
                                                 {"key": "d", "operator": "DoesNotExist"},
                                                 {"key": "aa", "operator": "Exists"}]}) == \
        "a=1,aa,b=2,c in (x,y),!d"
    assert selector_string({}) == "" and selector_string(None) == ""


def test_a_statefulsets_identity_fields_are_immutable(reg: Registry) -> None:
    reg.create(STS, "default", workload("StatefulSet", serviceName="db"), W)
    changed = copy.deepcopy(reg.get(STS, "default", "statefulset"))
    changed["spec"]["serviceName"] = "other"
    changed["spec"]["podManagementPolicy"] = "Parallel"
    changed["spec"]["replicas"] = 3
    err = failure(lambda: reg.update(STS, "default", "statefulset", "", changed, W))
    assert err.message == ('StatefulSet.apps "statefulset" is invalid: [spec.serviceName: Invalid value: "other": '
                           'field is immutable, spec.podManagementPolicy: Invalid value: "Parallel": field is '
                           "immutable]")


def test_field_selectors_upstream_supports(reg: Registry) -> None:
    from nodeagent.apiserver.selection import parse_field_selector

    reg.create(JOBS, "default", job(), W)
    getters = reg.behaviour(JOBS).strategy.field_getters()
    found, *_ = reg.list(JOBS, "default", None, parse_field_selector("status.successful=1", getters, "Job", "v1"))
    assert found == []
    found, *_ = reg.list(JOBS, "default", None, parse_field_selector("status.successful=0", getters, "Job", "v1"))
    assert [o["metadata"]["name"] for o in found] == ["pi"]


def test_a_statefulsets_claim_templates_are_persistent_volume_claims(reg: Registry) -> None:
    claim = {"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"],
                                                    "resources": {"requests": {"storage": "1Gi"}}},
             "bogus": 1}
    out = reg.create(STS, "default", workload("StatefulSet", volumeClaimTemplates=[claim]), W).object
    assert out["spec"]["volumeClaimTemplates"] == [{k: v for k, v in claim.items() if k != "bogus"}]
