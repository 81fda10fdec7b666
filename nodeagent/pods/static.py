"""Static pods: watch staticPodPath and keep the pod manager in step with the files in it.

Like the kubelet's file source, the directory is watched (inotify, through the DirWatch
port in nodeagent.util.fswatch) and a full pass runs as soon as anything in it changes, plus
every fileCheckFrequency (20 s by default, on the injected clock) as a resync; without a
watch it is only polled. *.yaml, *.yml and *.json files that do not start with a dot each hold one
Pod. A file added is applied with source "file", a changed file replaces its pod (the uid
is the hash of content, node and path, so a change gives a new pod), a removed file, or one
that turned invalid, deletes its pod. A bad file is logged and recorded as a Warning event
naming the file and the field path; the loop never dies of it. Static pod names get the
node name suffix, `<name>-<nodeName>`, and spec.nodeName is set to this node. Files are read
and parsed in a worker thread (asyncio.to_thread), never on the event loop. Unknown fields are
dropped as the kubelet's lenient decoding drops them, but named: a warning in the log and a
Warning event (UnknownField) on the pod.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from nodeagent.errors import NodeAgentError, NotFound
from nodeagent.objects import yaml_budget
from nodeagent.objects.pod.manifest import pod_from_manifest
from nodeagent.objects.pod.model import Pod
from nodeagent.pods.events import EventRecorder, ObjectRef
from nodeagent.pods.manager import PodManager
from nodeagent.util.clock import Clock
from nodeagent.util.fswatch import DirWatch, wait_change

logger = logging.getLogger(__name__)

EXTENSIONS = (".yaml", ".yml", ".json")
DEFAULT_INTERVAL = 20.0  # the kubelet's fileCheckFrequency
MAX_CONFIG_LENGTH = 10 * 1024 * 1024  # the kubelet's maxConfigLength for a pod manifest
ANNOTATION_CONFIG_HASH = "kubernetes.io/config.hash"
ANNOTATION_CONFIG_SOURCE = "kubernetes.io/config.source"
FAILED_VALIDATION = "FailedValidation"
UNKNOWN_FIELD = "UnknownField"
MAX_UNKNOWN_SHOWN = 20

UnknownFields = Callable[[Any], Sequence[str]]


class ManifestFileError(NodeAgentError):
    """A static pod file that cannot be read or parsed."""


def static_pod_uid(doc: Mapping[str, Any], *, node_name: str, path: str) -> str:
    """The kubelet's static pod uid: md5 of the pod content, then `host:<node>` and `file:<path>`."""
    hasher = hashlib.md5(usedforsecurity=False)
    hasher.update(json.dumps(doc, sort_keys=True, separators=(",", ":"), default=str).encode())
    hasher.update(f"host:{node_name}".encode())
    hasher.update(f"file:{path}".encode())
    return hasher.hexdigest()


def static_pod_from_manifest(doc: Any, *, path: str, node_name: str, clock: Clock) -> Pod:
    """The kubelet's applyDefaults for file pods, then the usual parsing and validation."""
    if not isinstance(doc, Mapping):
        return pod_from_manifest(doc, source="file", clock=clock)  # raises the type error
    out: dict[str, Any] = dict(doc)
    md = doc.get("metadata")
    uid = static_pod_uid(doc, node_name=node_name, path=path)
    if isinstance(md, Mapping):
        md = dict(md)
        if isinstance(md.get("uid"), str) and md["uid"]:
            uid = md["uid"]
        if isinstance(md.get("name"), str) and md["name"]:
            md["name"] = f"{md['name']}-{node_name.lower()}"
        if not md.get("namespace"):
            md["namespace"] = "default"
        annotations = md.get("annotations")
        if annotations is None or isinstance(annotations, Mapping):
            annotations = dict(annotations or {})
            annotations[ANNOTATION_CONFIG_HASH] = uid
            annotations[ANNOTATION_CONFIG_SOURCE] = "file"
            md["annotations"] = annotations
        out["metadata"] = md
    spec = doc.get("spec")
    if isinstance(spec, Mapping):
        out["spec"] = {**spec, "nodeName": node_name}
    return pod_from_manifest(out, source="file", uid=uid, clock=clock)


def load_manifest(path: Path) -> Any:
    """One document from a .json, .yaml or .yml file; ManifestFileError when unreadable.

    Bounded as the kubelet's config sources are: at most MAX_CONFIG_LENGTH bytes (its
    maxConfigLength), YAML within go-yaml's alias budget and a nesting depth (yaml_budget),
    JSON within the parser's recursion limit."""
    try:
        with path.open("rb") as f:
            data = f.read(MAX_CONFIG_LENGTH + 1)
    except OSError as err:
        raise ManifestFileError(f"cannot read {path}: {err}") from err
    return parse_manifest(path, data)


def parse_manifest(path: Path, data: bytes) -> Any:
    """load_manifest's parse of bytes already read (at most MAX_CONFIG_LENGTH + 1 of them)."""
    if len(data) > MAX_CONFIG_LENGTH:
        raise ManifestFileError(f"cannot read {path}: file is larger than {MAX_CONFIG_LENGTH} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ManifestFileError(f"cannot read {path}: {err}") from err
    try:
        if path.suffix == ".json":
            return json.loads(text)
        return yaml_budget.safe_load(text)
    except RecursionError:
        raise ManifestFileError(f"cannot parse {path}: exceeded max depth") from None
    except yaml_budget.YAMLBudgetError as err:
        raise ManifestFileError(f"cannot parse {path}: yaml: {err}") from err
    except (ValueError, yaml.YAMLError) as err:
        raise ManifestFileError(f"cannot parse {path}: {err}") from err


@dataclass(frozen=True)
class _Loaded:
    """One file as read in the worker thread: its digest (None: unreadable), unchanged, or parsed."""

    digest: str | None
    unchanged: bool = False
    pod: Pod | None = None
    error: NodeAgentError | None = None
    unknown: tuple[str, ...] = ()  # field paths the Pod schema does not know (dropped)


@dataclass
class _Tracked:
    digest: str
    key: str | None  # namespace/name of the pod applied from it, None when the file is bad


class StaticPodSource:
    def __init__(
        self,
        *,
        path: Path,
        manager: PodManager,
        node_name: str,
        clock: Clock,
        recorder: EventRecorder,
        interval: float = DEFAULT_INTERVAL,
        watch: DirWatch | None = None,
        unknown_fields: UnknownFields | None = None,
    ) -> None:
        """`unknown_fields(doc)`: the paths of fields the Pod schema does not declare (from the API
        server's schema, passed in: the node side does not import it); None: not reported."""
        self._unknown_fields = unknown_fields
        self._path = Path(path)
        self._manager = manager
        self._node_name = node_name
        self._clock = clock
        self._recorder = recorder
        self._interval = interval
        self._watch = watch
        self._files: dict[Path, _Tracked] = {}

    async def run(self) -> None:
        """A pass on every change and every interval, until cancelled; a failing pass is logged."""
        try:
            while True:
                try:
                    await self.sync_once()
                except asyncio.CancelledError:
                    raise
                except Exception:
                    logger.exception("static pod sync failed path=%s", self._path)
                await wait_change(self._watch, self._clock, self._interval)
        finally:
            if self._watch is not None:
                self._watch.close()

    def _list(self) -> list[Path]:
        try:
            entries = sorted(self._path.iterdir())
        except FileNotFoundError:
            return []
        except OSError as err:
            logger.warning("static pod path unreadable path=%s err=%s", self._path, err)
            return [p for p in self._files if p.exists()]
        return [
            p for p in entries if p.suffix in EXTENSIONS and not p.name.startswith(".") and p.is_file()
        ]

    async def sync_once(self) -> None:
        present = self._list()
        for gone in [p for p in self._files if p not in present]:
            tracked = self._files.pop(gone)
            logger.info("static pod file removed file=%s", gone)
            await self._delete(tracked.key)
        for path in present:
            await self._sync_file(path)
        # Static pods restored from the database whose file went away while the daemon was
        # down are known to no tracked file: they are deleted like any removed file's pod.
        produced = {t.key for t in self._files.values() if t.key is not None}
        for pod in self._manager.all_pods():
            if pod.source == "file" and pod.key not in produced:
                logger.info("static pod without a file removed pod=%s", pod.key)
                await self._delete(pod.key)

    def _load(self, path: Path, known_digest: str | None) -> _Loaded:
        """Read, hash and (when changed) parse one file: run in a worker thread, so a 10 MiB file or a
        slow parse never stalls the event loop (a 50 MB file once stalled every socket for 26.5 s)."""
        try:
            with path.open("rb") as f:
                data = f.read(MAX_CONFIG_LENGTH + 1)
        except OSError as err:
            return _Loaded(None, error=ManifestFileError(f"cannot read {path}: {err}"))
        digest = hashlib.sha256(data).hexdigest()
        if digest == known_digest:
            return _Loaded(digest, unchanged=True)
        try:
            doc = parse_manifest(path, data)
            pod = static_pod_from_manifest(doc, path=str(path), node_name=self._node_name, clock=self._clock)
        except NodeAgentError as err:
            return _Loaded(digest, error=err)
        unknown = tuple(self._unknown_fields(doc)) if self._unknown_fields is not None else ()
        return _Loaded(digest, pod=pod, unknown=unknown)

    async def _sync_file(self, path: Path) -> None:
        tracked = self._files.get(path)
        loaded = await asyncio.to_thread(self._load, path, tracked.digest if tracked is not None else None)
        if loaded.unchanged:
            return
        if loaded.digest is None:
            logger.warning("static pod file unreadable file=%s err=%s", path, loaded.error)
            return
        digest = loaded.digest
        old_key = tracked.key if tracked is not None else None
        try:
            if loaded.error is not None:
                raise loaded.error
            pod = loaded.pod
            assert pod is not None
            owner = self._owner_of(pod.key, path)
            if owner is not None:
                raise ManifestFileError(
                    f'metadata.name: Duplicate value: "{pod.name}" (already defined in {owner})'
                )
        except NodeAgentError as err:
            self._files[path] = _Tracked(digest, None)
            self._bad_file(path, err)
            await self._delete(old_key)
            return
        if old_key is not None and old_key != pod.key:
            await self._delete(old_key)
        try:
            _, result = await self._manager.apply(pod)
        except NodeAgentError as err:
            self._files[path] = _Tracked(digest, None)
            self._bad_file(path, err)
            return
        self._files[path] = _Tracked(digest, pod.key)
        logger.info("static pod applied file=%s pod=%s uid=%s result=%s", path, pod.key, pod.uid, result)
        if loaded.unknown:
            self._unknown(path, pod, loaded.unknown)

    def _unknown(self, path: Path, pod: Pod, fields: tuple[str, ...]) -> None:
        """The kubelet decodes static pod files leniently (tryDecodeSinglePod's UniversalDecoder drops
        unknown fields without a word); the fields are still named, in the log and on the pod."""
        shown = fields[:MAX_UNKNOWN_SHOWN]
        more = f" and {len(fields) - len(shown)} more" if len(fields) > len(shown) else ""
        names = ", ".join(f'unknown field "{f}"' for f in shown) + more
        logger.warning("static pod file has unknown fields, ignored as the kubelet does file=%s pod=%s fields=%s",
                       path, pod.key, names)
        self._recorder.warning(ObjectRef.for_pod(pod), UNKNOWN_FIELD,
                               f"Static pod file {path}: {names} (ignored)")

    def _owner_of(self, key: str, path: Path) -> Path | None:
        for other, tracked in self._files.items():
            if other != path and tracked.key == key:
                return other
        return None

    def _bad_file(self, path: Path, err: NodeAgentError) -> None:
        logger.warning("static pod file invalid, ignored file=%s err=%s", path, err)
        self._recorder.warning(
            ObjectRef("Node", self._node_name),
            FAILED_VALIDATION,
            f"Error validating static pod file {path} due to {err}, ignoring",
        )

    async def _delete(self, key: str | None) -> None:
        if key is None:
            return
        namespace, _, name = key.partition("/")
        try:
            await self._manager.delete(namespace, name)
        except NotFound:
            pass
        except NodeAgentError as err:
            logger.error("static pod delete failed pod=%s err=%s", key, err)
