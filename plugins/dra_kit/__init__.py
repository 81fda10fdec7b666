"""dra_kit: a small framework for DRA kubelet-plugin drivers (the fake GPU driver, the netdev driver).

It plays a driver's side of the kubelet contract (../shared/spec/kubelet-grpc-apis.md §3) so a
driver only writes its device logic. Public API (import from the submodules named):

model (pure dataclasses; no protobuf ever reaches a driver)
    ClaimRef(namespace, uid, name); AllocatedDevice(request, pool, device, admin_access, share_id)
    PreparedDevice(request_names, pool_name, device_name, cdi_device_ids=(), share_id=None)
    PrepareResult(devices=(), error=""); DeviceHealth(pool, device, health="Healthy",
    timeout_seconds=0, message=""); HEALTHY/UNHEALTHY/UNKNOWN; tokens V1_PLUGIN, V1BETA1_PLUGIN,
    V1_HEALTH, V1BETA1_HEALTH, V1ALPHA1_HEALTH, HEALTH_SERVICES, ALL_SERVICES.
ports.DriverBackend (Protocol) — what a driver implements:
    async prepare(claims: Sequence[ClaimRef]) -> Mapping[uid, PrepareResult]
    async unprepare(claims: Sequence[ClaimRef]) -> Mapping[uid, str]   # "" = done
    health_board() -> HealthBoard | None                               # None: no health services
health.HealthBoard(devices: Iterable[DeviceHealth], resend=10.0)
    snapshot(); get(pool, device); async set(pool, device, health, message="") -> changed;
    async replace(devices); async pause(bool); async watch() (complete list at once, on every
    change, and every `resend` s); close()/reopen() are called by DriverServer.
server.DriverServer(driver_name, root_dir, backend, *, services=ALL_SERVICES,
        registration_path=None, plugin_path=None, commands=None, watch_interval=1.0)
    Serves ROOT/plugins/<driver>/dra.sock (DRAPlugin v1+v1beta1, DRAResourceHealth v1+v1beta1+v1alpha1,
    reflection, grpc.health), ROOT/plugins_registry/<driver>-reg.sock (Registration: GetInfo,
    NotifyRegistrationStatus) and <dra.sock>.ctl (JSON lines: set_health {"device": "POOL/DEV",
    "health": ...}, list, pause_health {"paused": bool}, status, + your `commands`:
    {name: async (arg) -> dict}). async start(); async stop(grace=1.0). Attributes:
    plugin_path, registration_path, control_path, supported_versions, registered (None|bool),
    registration_error, registration_events, registration_changed (asyncio.Event),
    prepare_calls, unprepare_calls, health_streams, health_opens. Health tokens are advertised (and served)
    only when backend.health_board() is not None.
kube: APIPort (Protocol) — the Kubernetes API as the kit needs it, plain dicts, typed errors
    (NotFound, Conflict, AlreadyExists, Gone, Unavailable, APIError): get_node, get_claim
    (resource.k8s.io v1, else v1beta2, else v1beta1), list_slices / watch_slices (field selector,
    resourceVersion, bookmarks), create_slice / update_slice / delete_slice (preconditions), close.
    KubeAccess(kubeconfig, timeout=10.0, watch_timeout=300) implements it with kubernetes_asyncio and
    reads the kubeconfig again when the file changes.
publisher: SlicePublisher(api, driver, pools: {pool: [v1 Device JSON]}, node_name=None (host name),
    interval=2.0): list+watch of the driver's slices on the node, one slice per pool created
    (generateName "<node>-<driver>-", owned by the Node), updated or deleted as needed, pool
    generation bumped when the device list changes; start(), async stop(), async set_pools(...),
    async sync() -> calls made, `published` event, counters creates/updates/deletes/lists.
slices: the pure planning behind it: plan_pool() -> [Create | Update | Delete], new_slice(),
    field_selector(), generate_name(), owner_reference().
claims: ClaimReader(api, driver).allocation(claim) -> ClaimAllocation(devices:
    tuple[AllocatedDevice], config: tuple[OpaqueConfig(requests, parameters, source)]), raising the
    kubeletplugin helper's errors (NotFound "retrieve claim NS/NAME: ...", FailedPrecondition
    "claim NS/NAME not allocated" / "claim NS/NAME got replaced"); pure allocation_of().
cdi: CDIWriter(directory, kind "<vendor>/<class>", driver): write(claim_uid, [CDIDevice(name,
    env=(...), device_nodes=(DeviceNode(path, host_path, permissions),))], common_env) -> CDI ids
    "<kind>=<name>" (atomic: temp + fsync + os.replace; file <dir>/<driver>-<claim uid>.json);
    device_name(claim_uid, device) -> "<uid>-<device>"; remove(claim_uid) -> bool; claims();
    spec_document(), write_atomic(), check_kind().
flow: ClaimFlow(driver, source: ClaimReader-like, store: PreparedStore(path|None),
    prepare_devices: async (claim, ClaimAllocation) -> [PreparedDevice],
    release_devices: async (claim, [PreparedDevice]) -> None) — idempotent batch prepare/unprepare
    with per-claim errors and an atomic JSON checkpoint; plug its prepare/unprepare into a backend.
    release_devices is also called for a claim the store does not know (with no devices), so a
    driver can clean up leftovers of a crash.
claimfile: ClaimFile(path|None, what=, version=, key=, encode=, decode=) — records by claim uid in
    one versioned JSON file (atomic rewrite): get/put/delete/uids/all; PreparedStore and the netdev
    driver's LinkStore are ClaimFiles.
control: ControlServer(path, commands); request(path, cmd) / arequest(path, cmd) client helpers
    (re-exported from plugins.common.control, which the fake device plugin uses too).
Process plumbing (run_until_stopped, pick_path, spawned_by_daemon, ENV_* names, DEFAULT_* paths)
    and profile loading are not the kit's: they live in plugins.common.runner and
    plugins.common.profile, shared with the fake device plugin.
"""
