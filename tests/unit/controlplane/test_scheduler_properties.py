"""Property test: random sequences of pod creations, completions and deletions against the claim
controller and the scheduler. After every settled step: no device is allocated to two claims,
every bound pod's claims are allocated and reserved for it, reservations name only live pods, and
once every pod is gone nothing is left reserved or allocated for a generated claim."""

from __future__ import annotations

import asyncio

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.controlplane.test_scheduler_support import (
    GPU,
    Cluster,
    claim,
    claim_spec,
    device,
    device_class,
    exact,
    first_available,
    node,
    pod,
    resource_slice,
    template,
)

OPS = st.lists(
    st.tuples(st.sampled_from(["create", "create-shared", "create-prio", "finish", "delete"]),
              st.integers(min_value=0, max_value=7)),
    min_size=1, max_size=25,
)


def check(c: Cluster) -> None:
    owners: dict[tuple[str, str, str], str] = {}
    pods = {p["metadata"]["uid"]: p for p in c.store.list("Pod")}
    for cl in c.store.list("ResourceClaim"):
        alloc = cl.get("status", {}).get("allocation")
        for r in (alloc or {}).get("devices", {}).get("results", []):
            dev = (r["driver"], r["pool"], r["device"])
            assert dev not in owners, f"{dev} allocated to {owners[dev]} and {cl['metadata']['name']}"
            owners[dev] = cl["metadata"]["name"]
        for ref in cl.get("status", {}).get("reservedFor", []):
            assert ref["uid"] in pods, f"claim {cl['metadata']['name']} reserved for a deleted pod"
            assert pods[ref["uid"]].get("status", {}).get("phase") not in ("Succeeded", "Failed")
    for p in pods.values():
        if not p["spec"].get("nodeName") or p.get("status", {}).get("phase") in ("Succeeded", "Failed"):
            continue
        for st_ in p.get("status", {}).get("resourceClaimStatuses", []):
            cl = c.get("ResourceClaim", st_["resourceClaimName"])
            assert cl["status"]["allocation"]
            assert any(r["uid"] == p["metadata"]["uid"] for r in cl["status"]["reservedFor"])


async def scenario(ops: list[tuple[str, int]]) -> None:
    c = Cluster()
    c.add(node("n1"), node("n2"), device_class("gpu", f'device.driver == "{GPU}"'), device_class("none", "false"),
          resource_slice("n1", GPU, [device("g0"), device("g1")]), resource_slice("n2", GPU, [device("g0")]),
          template("t", claim_spec(exact("gpu", "gpu"))),
          template("prio", claim_spec(first_available("gpu", ("x", "none", 1), ("y", "gpu", 1)))),
          claim("shared", claim_spec(exact("gpu", "gpu"))))
    live: set[str] = set()
    for op, i in ops:
        name = f"p{i}"
        if op.startswith("create") and name not in live:
            kind = {"create": {"templates": {"gpu": "t"}}, "create-prio": {"templates": {"gpu": "prio"}},
                    "create-shared": {"claims": {"gpu": "shared"}}}[op]
            c.add(pod(name, **kind))  # type: ignore[arg-type]
            live.add(name)
        elif op == "finish" and name in live:
            p = c.get("Pod", name)
            p.setdefault("status", {})["phase"] = "Succeeded"
            c.store.update_status(p)
        elif op == "delete" and name in live:
            c.delete("Pod", name)
            live.discard(name)
        c.run()
        check(c)
    for name in sorted(live):
        c.delete("Pod", name)
    c.run()
    check(c)
    for cl in c.store.list("ResourceClaim"):
        assert not cl.get("status", {}).get("reservedFor"), cl
        assert not cl.get("status", {}).get("allocation"), cl
    assert [cl["metadata"]["name"] for cl in c.store.list("ResourceClaim")] == ["shared"]
    c.watch.close()


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS)
def test_random_create_delete_sequences(ops: list[tuple[str, int]]) -> None:
    asyncio.run(scenario(ops))
