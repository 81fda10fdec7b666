"""Namespaces: only namespaces/finalize writes spec.finalizers (validated as
ValidateNamespaceFinalizeUpdate), and a create in a Terminating namespace gets the
NamespaceLifecycle admission's 403 naming the object, with its NamespaceTerminating cause."""

from __future__ import annotations

from nodeagent.apiserver.options import WriteOptions
from nodeagent.apiserver.registry import MERGE_PATCH, Registry
from tests.unit.corekinds.conftest import failure, res

NS, CM = res("namespaces"), res("configmaps")
W = WriteOptions()


def ns(name: str, **spec: object) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}, "spec": spec}


def test_finalize_writes_the_finalizers_and_updates_do_not(reg: Registry) -> None:
    made = reg.create(NS, "", ns("fin"), W).object
    assert made["spec"] == {"finalizers": ["kubernetes"]}
    kept = reg.patch(NS, "", "fin", "", MERGE_PATCH, {"spec": {"finalizers": []}}, W).object
    assert kept["spec"]["finalizers"] == ["kubernetes"]
    body = {**made, "spec": {"finalizers": ["kubernetes", "example.com/cleanup"]}}
    body["metadata"] = {**made["metadata"]}
    done = reg.update(NS, "", "fin", "finalize", body, W).object
    assert done["spec"]["finalizers"] == ["kubernetes", "example.com/cleanup"]
    assert done["status"] == {"phase": "Active"}
    bad = {**done, "spec": {"finalizers": ["custom", "a b/c"]}}
    err = failure(lambda: reg.update(NS, "", "fin", "finalize", bad, W))
    assert err.code == 422 and err.message.startswith(
        'Namespace "fin" is invalid: [spec.finalizers[0]: Invalid value: "custom": name is neither a standard '
        "finalizer name nor is it fully qualified, spec.finalizers[1]: Invalid value: \"a b/c\": prefix part")


def test_create_in_a_terminating_namespace(reg: Registry) -> None:
    reg.create(NS, "", ns("going"), W)
    reg.patch(NS, "", "going", "status", MERGE_PATCH, {"status": {"phase": "Terminating"}}, W)
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "late", "namespace": "going"}}
    err = failure(lambda: reg.create(CM, "going", body, W))
    assert (err.code, err.reason, err.message) == (
        403, "Forbidden", 'configmaps "late" is forbidden: unable to create new content in namespace going because '
        "it is being terminated")
    assert err.details == {"name": "late", "kind": "configmaps", "causes": [
        {"reason": "NamespaceTerminating", "message": "namespace going is being terminated",
         "field": "metadata.namespace"}]}


def test_terminating_lifecycle(reg: Registry) -> None:
    """Delete marks Terminating; a write keeps it (spec.finalizers holds `kubernetes`); creates are
    refused; the namespace controller deletes the content and then the namespace."""
    from nodeagent.apiserver.options import DeleteOptions
    from nodeagent.controlplane.controllers.namespace import NamespaceController

    reg.create(NS, "", ns("life"), W)
    reg.create(CM, "life", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}, W)
    kept = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kept", "finalizers": ["example.com/x"]}}
    reg.create(CM, "life", kept, W)
    marked = reg.delete(NS, "", "life", DeleteOptions())
    assert marked["status"]["phase"] == "Terminating"
    reg.patch(NS, "", "life", "", MERGE_PATCH, {"metadata": {"labels": {"x": "y"}}}, W)
    assert reg.store.peek("Namespace", "", "life") is not None
    err = failure(lambda: reg.create(CM, "life", {"apiVersion": "v1", "kind": "ConfigMap",
                                                  "metadata": {"name": "b"}}, W))
    assert err.code == 403
    controller = NamespaceController(reg.store, reg.clock)
    assert not controller.sync("life")  # `kept` waits for its own finalizer
    assert reg.store.peek("ConfigMap", "life", "a") is None
    assert reg.store.peek("Namespace", "", "life") is not None
    reg.patch(CM, "life", "kept", "", MERGE_PATCH, {"metadata": {"finalizers": None}}, W)
    assert controller.sync("life")
    assert reg.store.peek("Namespace", "", "life") is None
