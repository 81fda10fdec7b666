"""Pods API messages from the source's plain data: pods become (*v1.Pod).Marshal() bytes.

Why a module: the service only decodes, calls and encodes; the event-type numbers of
pods/v1alpha1 and the Pod encoding meet the generated messages here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Sequence

from nodeagent.apis.pods.v1alpha1 import api_pb2
from nodeagent.podsapi import model
from nodeagent.podsapi.model import Doc, PodEvent
from nodeagent.podsapi.podproto import encode_pod

_TYPES = {
    model.ADDED: api_pb2.ADDED,
    model.MODIFIED: api_pb2.MODIFIED,
    model.DELETED: api_pb2.DELETED,
}


def list_response(pods: Sequence[Doc]) -> api_pb2.ListPodsResponse:
    return api_pb2.ListPodsResponse(pods=[encode_pod(p) for p in pods])


def get_response(pod: Doc) -> api_pb2.GetPodResponse:
    return api_pb2.GetPodResponse(pod=encode_pod(pod))


def added(pod: Doc) -> api_pb2.WatchPodsEvent:
    return api_pb2.WatchPodsEvent(type=api_pb2.ADDED, pod=encode_pod(pod))


def initial_sync_complete() -> api_pb2.WatchPodsEvent:
    return api_pb2.WatchPodsEvent(type=api_pb2.INITIAL_SYNC_COMPLETE)


def event(ev: PodEvent) -> api_pb2.WatchPodsEvent:
    return api_pb2.WatchPodsEvent(type=_TYPES[ev.type], pod=encode_pod(ev.pod))
