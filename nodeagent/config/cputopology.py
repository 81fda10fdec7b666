"""nodeProfile.cpuTopology: the machine's sockets, cores, hyperthreads and NUMA nodes. Pure.

Two spellings, expanded here into one explicit list of cores (config.model.CpuTopologySpec):

- shorthand: `{sockets: 2, coresPerSocket: 8, threadsPerCore: 2, numaNodesPerSocket: 1}`,
  numbered as Linux numbers most machines: the first thread of every core first, then the
  second threads (a core's siblings are `ncores` apart). `numbering: linear` (default) gives
  each socket a contiguous block of cores (socket 0 = cpus 0..C-1), as the kubelet's test
  topologies topoSingleSocketHT and topoDualSocketNoHT; `numbering: interleaved` alternates
  sockets (cpu 0 on socket 0, cpu 1 on socket 1, ...), as topoDualSocketHT. Cores of a socket
  are split evenly over its NUMA nodes; each NUMA node is one L3 (uncore cache) group, or
  groups of `coresPerUncoreCache` cores (several L3 caches per NUMA node, as AMD's CCXs).
- explicit: `{cores: [{threads: "0,4", socket: 0, numaNode: 0, uncoreCache: 0}, ...]}`.

`numaDistances` (either spelling) is the distance matrix in NUMA node id order
(/sys/devices/system/node/node*/distance); by default 10 to itself, 11 within a socket and
21 across sockets. Core ids are the lowest thread id of each core, as the kubelet numbers
them (getUniqueCoreID).
"""

from __future__ import annotations

from collections.abc import Mapping

from nodeagent.config.fields import as_int, check_keys, choice, expect, parse_cpuset
from nodeagent.config.model import CpuCore, CpuTopologySpec
from nodeagent.errors import ConfigError

_SHORTHAND = ("sockets", "coresPerSocket", "threadsPerCore", "numaNodesPerSocket", "coresPerUncoreCache",
              "numbering")
LINEAR = "linear"
INTERLEAVED = "interleaved"
MAX_CPUS = 4096


def parse_cpu_topology(value: object, path: str) -> CpuTopologySpec:
    doc = expect(value, dict, path, "object")
    check_keys(doc, {*_SHORTHAND, "cores", "numaDistances"}, path)
    shorthand = [k for k in _SHORTHAND if k in doc]
    if "cores" in doc and shorthand:
        raise ConfigError(f"{path}: Invalid value: give either cores or the shorthand "
                          f"(sockets, coresPerSocket, ...), not both")
    if "cores" in doc:
        cores = _explicit(doc["cores"], f"{path}.cores")
    elif shorthand:
        cores = _shorthand(doc, path)
    else:
        raise ConfigError(f"{path}: Required value: cores, or sockets/coresPerSocket/threadsPerCore")
    distances = _distances(doc.get("numaDistances"), f"{path}.numaDistances", cores)
    return CpuTopologySpec(cores=cores, numa_distances=distances)


def expand(sockets: int, cores_per_socket: int, threads_per_core: int,
           numa_per_socket: int = 1, numbering: str = LINEAR, cores_per_uncore: int = 0) -> tuple[CpuCore, ...]:
    """The cores of a sockets x cores x threads machine, numbered as the module docstring says.

    `cores_per_uncore` splits each NUMA node's cores into L3 groups of that many (0: one group
    per NUMA node), numbered machine-wide in core order, as AMD's CCXs.
    """
    total_cores = sockets * cores_per_socket
    per_numa = cores_per_socket // numa_per_socket
    per_uncore = cores_per_uncore or per_numa
    groups_per_numa = per_numa // per_uncore
    out: list[CpuCore] = []
    for s in range(sockets):
        for c in range(cores_per_socket):
            first = c * sockets + s if numbering == INTERLEAVED else s * cores_per_socket + c
            numa = s * numa_per_socket + c // per_numa
            uncore = numa * groups_per_numa + (c % per_numa) // per_uncore
            threads = tuple(first + t * total_cores for t in range(threads_per_core))
            out.append(CpuCore(threads=threads, socket=s, numa_node=numa, uncore_cache=uncore))
    return tuple(sorted(out, key=lambda core: core.threads[0]))


def _shorthand(doc: Mapping[str, object], path: str) -> tuple[CpuCore, ...]:
    for key in ("sockets", "coresPerSocket", "threadsPerCore"):
        if key not in doc:
            raise ConfigError(f"{path}.{key}: Required value")
    sockets = as_int(doc["sockets"], f"{path}.sockets", minimum=1)
    cores = as_int(doc["coresPerSocket"], f"{path}.coresPerSocket", minimum=1)
    threads = as_int(doc["threadsPerCore"], f"{path}.threadsPerCore", minimum=1)
    numa = as_int(doc.get("numaNodesPerSocket", 1), f"{path}.numaNodesPerSocket", minimum=1)
    numbering = choice(doc.get("numbering", LINEAR), f"{path}.numbering", frozenset({LINEAR, INTERLEAVED}))
    if cores % numa:
        raise ConfigError(f"{path}.numaNodesPerSocket: Invalid value: {numa}: must divide "
                          f"coresPerSocket ({cores}) evenly")
    per_uncore = as_int(doc.get("coresPerUncoreCache", cores // numa), f"{path}.coresPerUncoreCache", minimum=1)
    if (cores // numa) % per_uncore:
        raise ConfigError(f"{path}.coresPerUncoreCache: Invalid value: {per_uncore}: must divide the cores of "
                          f"a NUMA node ({cores // numa}) evenly")
    if sockets * cores * threads > MAX_CPUS:
        raise ConfigError(f"{path}: Invalid value: {sockets * cores * threads} cpus (at most {MAX_CPUS})")
    return expand(sockets, cores, threads, numa, numbering, per_uncore)


def _explicit(value: object, path: str) -> tuple[CpuCore, ...]:
    items = expect(value, list, path, "array")
    if not items:
        raise ConfigError(f"{path}: Required value: at least one core")
    seen: dict[int, int] = {}
    out: list[CpuCore] = []
    for i, item in enumerate(items):
        p = f"{path}[{i}]"
        core = expect(item, dict, p, "object")
        check_keys(core, {"threads", "socket", "numaNode", "uncoreCache"}, p)
        threads = parse_cpuset(core.get("threads", ""), f"{p}.threads")
        if not threads:
            raise ConfigError(f"{p}.threads: Required value: a core needs at least one thread")
        for cpu in threads:
            if cpu in seen:
                raise ConfigError(f"{p}.threads: Duplicate value: cpu {cpu} already belongs to "
                                  f"{path}[{seen[cpu]}]")
            seen[cpu] = i
        socket = as_int(core.get("socket", 0), f"{p}.socket", minimum=0)
        numa = as_int(core.get("numaNode", socket), f"{p}.numaNode", minimum=0)
        uncore = as_int(core.get("uncoreCache", numa), f"{p}.uncoreCache", minimum=0)
        out.append(CpuCore(threads=threads, socket=socket, numa_node=numa, uncore_cache=uncore))
    counts = {len(c.threads) for c in out}
    if len(counts) > 1:
        raise ConfigError(f"{path}: Invalid value: every core needs the same number of threads "
                          f"(found {', '.join(map(str, sorted(counts)))})")
    return tuple(sorted(out, key=lambda core: core.threads[0]))


def default_distance(a_socket: int, b_socket: int, same_node: bool) -> int:
    if same_node:
        return 10
    return 11 if a_socket == b_socket else 21


def _distances(value: object, path: str, cores: tuple[CpuCore, ...]) -> dict[int, tuple[int, ...]]:
    if value is None:
        return {}
    nodes = sorted({c.numa_node for c in cores})
    rows = expect(value, list, path, "array")
    if len(rows) != len(nodes):
        raise ConfigError(f"{path}: Invalid value: {len(rows)} rows for {len(nodes)} NUMA nodes "
                          f"({', '.join(map(str, nodes))})")
    out: dict[int, tuple[int, ...]] = {}
    for i, (node, row) in enumerate(zip(nodes, rows, strict=True)):
        cells = expect(row, list, f"{path}[{i}]", "array")
        if len(cells) != len(nodes):
            raise ConfigError(f"{path}[{i}]: Invalid value: {len(cells)} distances for {len(nodes)} NUMA nodes")
        values = tuple(as_int(v, f"{path}[{i}][{j}]", minimum=10) for j, v in enumerate(cells))
        for j, v in enumerate(values):
            if v > 254:
                raise ConfigError(f"{path}[{i}][{j}]: Invalid value: {v}: NUMA distances are 10..254")
        if values[i] != 10:
            raise ConfigError(f"{path}[{i}][{i}]: Invalid value: {values[i]}: a node's distance to itself is 10")
        out[node] = values
    return out


def render_cpu_topology(spec: CpuTopologySpec | None) -> dict[str, object]:
    """The explicit spelling (for /configz); {} when the profile has no cpuTopology."""
    if spec is None:
        return {}
    doc: dict[str, object] = {
        "cores": [
            {"threads": ",".join(map(str, c.threads)), "socket": c.socket, "numaNode": c.numa_node,
             "uncoreCache": c.uncore_cache}
            for c in spec.cores
        ]
    }
    if spec.numa_distances:
        doc["numaDistances"] = [list(spec.numa_distances[n]) for n in sorted(spec.numa_distances)]
    return {"cpuTopology": doc}
