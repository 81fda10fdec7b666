"""How large a write may be: etcd's request limit, as a real cluster's store applies it (issue 25).

Why: a real cluster refuses an object whose etcd request exceeds etcd's --max-request-bytes (1.5 MiB by
default, embed.DefaultMaxRequestBytes); nodeagent's store had no bound, so it kept (and the node ran)
pods no cluster would hold. Measured on kube-apiserver v1.37.2 + etcd v3.7.0 (the test fixture, etcd
started without the flag): a create, update or patch whose stored object is too large is answered 500
with etcd's text and no reason, "etcdserver: request is too large"; past the etcd client's send limit
(2 MiB, clientv3's defaultMaxCallSendMsgSize) the client refuses it first: "rpc error: code =
ResourceExhausted desc = trying to send message larger than max (N vs. 2097152)", N the TxnRequest's
size. kube-apiserver then tries a create, update or non-apply patch once more without managedFields
(apiserver's endpoints/handlers isTooLargeError): that retry is the API server's (registry.py) and the
in-process writers' (txn.Transaction), not this module's.

What is measured is what etcd measures: the raft request (InternalRaftRequest{header, txn}) holding
the TxnRequest of storage's OptimisticPut (a compare on the key's mod revision, a put of the value,
and for an update a range of the key on failure), around the stored value: the object's protobuf
envelope (`k8s\\x00`...) for built-in kinds with a message, its JSON and a newline (Go's json.Encoder)
for the others, both without metadata.resourceVersion (etcd's revision is it). The header's request ID
is a varint of 9 or 10 bytes (etcd's ID generator puts the member ID's low 16 bits on top, so it
depends on the member); this takes 10, the stricter: the fixture's bisections found the limit to the
byte (a custom resource under a 43-byte key: 1,572,738 stored bytes created, one more refused; an
update: 1,572,688), with a 10-byte ID in each of its runs. Keys are
/registry/<resource>/<ns>/<name> (custom resources: /registry/<group>/<resource>/...). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable

from nodeagent.errors import RequestTooLarge
from nodeagent.store.kinds import KindInfo, Obj

MAX_REQUEST_BYTES = 1572864
"""etcd's --max-request-bytes default (1.5 MiB): the largest raft request the server takes."""
MAX_SEND_BYTES = 2097152
"""The etcd client's largest gRPC message (clientv3 defaultMaxCallSendMsgSize, 2 MiB)."""
TOO_LARGE = "etcdserver: request is too large"
_HEADER = 14  # the raft header field: tag (2) + length (1) + ID's tag (1) + ID (10)
_LEASE = 10  # a put's lease (Events, --event-ttl): tag + an ID of 9 bytes

StoredSize = Callable[[KindInfo, Obj], int | None]
"""(kind, object) -> the length of its stored encoding when the kind is stored as protobuf (the API
server's encoder supplies it: ObjectStore.stored_size), None when it is stored as JSON."""

# upstream's storage prefixes that are not the resource's name (pkg/registry/*/storage)
_PREFIXES = {"Node": "minions", "Service": "services/specs", "Endpoints": "services/endpoints"}


def _varint(n: int) -> int:
    return max(1, (n.bit_length() + 6) // 7)


def _field(body: int) -> int:
    """A length-delimited field of `body` bytes: tag, length, body."""
    return 1 + _varint(body) + body


def etcd_key(info: KindInfo, namespace: str, name: str) -> int:
    """The length of the object's etcd key."""
    prefix = _PREFIXES.get(info.kind, info.plural)
    if info.custom:
        prefix = f"{info.resource.partition('.')[2]}/{prefix}"
    return len(f"/registry/{prefix}/{namespace}/{name}" if namespace else f"/registry/{prefix}/{name}")


def txn_size(key: int, value: int, *, update: bool, revision: int, lease: bool = False) -> int:
    """The TxnRequest's size: If(mod revision == revision) Then(put) [Else(get) for an update]."""
    compare = 2 + _field(key) + 1 + _varint(revision)  # target MOD, key, mod_revision (a oneof: always written)
    put = _field(key) + _field(value) + (_LEASE if lease else 0)
    out = _field(compare) + _field(_field(put))  # success: a RequestOp holding the put
    if update:
        out += _field(_field(_field(key)))  # failure: a RequestOp holding a range of the key
    return out


def raft_size(txn: int) -> int:
    """The InternalRaftRequest around a TxnRequest of `txn` bytes (its field 7)."""
    return _HEADER + _field(txn)


def check(key: int, value: int, *, update: bool, revision: int, lease: bool = False) -> None:
    """RequestTooLarge with the text kube-apiserver answers when a stored value of `value` bytes under a
    key of `key` bytes is more than etcd takes."""
    txn = txn_size(key, value, update=update, revision=revision, lease=lease)
    if txn > MAX_SEND_BYTES:
        raise RequestTooLarge("rpc error: code = ResourceExhausted desc = trying to send message larger than "
                              f"max ({txn} vs. {MAX_SEND_BYTES})")
    if raft_size(txn) > MAX_REQUEST_BYTES:
        raise RequestTooLarge(TOO_LARGE)


_SURELY_FITS = MAX_REQUEST_BYTES - 128
"""3 x key + value at or under this fits whatever the revision, lease and operation: with every length
under 2^21 (varints of at most 3 bytes, so a field adds at most 4), the TxnRequest is at most 3 x key +
value + 59 bytes (the key three times, the revision's varint at most 10, the lease 10) and the raft
request 18 more; below etcd's limit it is below the client's send limit too."""


def fits(key: int, value: int, *, update: bool, revision: int, lease: bool = False) -> bool:
    """Whether `check` passes. Most writes are far from the limit: answered without measuring
    (_SURELY_FITS; every write of the store asks, ~10 us each for the exact count)."""
    if 3 * key + value <= _SURELY_FITS:
        return True
    try:
        check(key, value, update=update, revision=revision, lease=lease)
    except RequestTooLarge:
        return False
    return True
