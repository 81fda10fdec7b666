"""What every client of a Kubernetes REST API here does alike: build an ApiClient from a kubeconfig,
read a refusal's metav1.Status body, and type the error of a refused request.

Shared by the node's RemoteAPI (nodeapi/remote.py), the DRA driver kit (plugins/dra_kit/kube.py)
and the conformance suite's client (conformance/kube.py), so the three read a server's answer the
same way: 404 NotFound, 409 Conflict (AlreadyExists when the Status reason says so), 410 Gone,
unreachable / 429 / 5xx Unavailable, anything else the caller's own error.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp.helpers import get_env_proxy_for_url
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio.config import ConfigException, load_kube_config
from yarl import URL

from nodeagent.errors import AlreadyExists, Conflict, NodeAgentError, NotFound, Unavailable

BODY_LIMIT = 500  # characters of a body that is not a Status (a proxy's HTML page) kept in a message


class KubeconfigError(Exception):
    """The kubeconfig could not be loaded; the message names the file."""


def status_of(body: Any, fallback: str) -> tuple[str, str]:
    """(message, reason) of a metav1.Status body; the fallback message when it has none."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except ValueError:
            return (body.strip()[:BODY_LIMIT] or fallback), ""
    if isinstance(body, Mapping):
        return str(body.get("message") or fallback), str(body.get("reason") or "")
    return fallback, ""


def error_for_status(status: int, message: str, reason: str, *, gone: Callable[[str], NodeAgentError],
                     other: Callable[[int, str], NodeAgentError]) -> NodeAgentError:
    """The typed error of a refused request (status 0: no answer at all)."""
    if status == 404:
        return NotFound(message)
    if status == 409:
        return AlreadyExists(message) if reason == "AlreadyExists" else Conflict(message)
    if status == 410:
        return gone(message)
    if status in (0, 429) or status >= 500:
        return Unavailable(message)
    return other(status, message)


async def load_client(kubeconfig: Path, user_agent: str) -> k8s.ApiClient:
    """An ApiClient for the server, TLS and credentials of a kubeconfig; KubeconfigError if it
    cannot be read or used."""
    configuration = k8s.Configuration()
    try:
        await load_kube_config(config_file=str(kubeconfig), client_configuration=configuration, persist_config=False)
    except (ConfigException, OSError, ValueError, KeyError, TypeError) as err:
        raise KubeconfigError(f"kubeconfig {kubeconfig}: {err}") from None
    if not configuration.proxy:
        proxy = _env_proxy(str(configuration.host))
        if proxy is not None:
            configuration.proxy = str(proxy[0].with_user(None))
            if proxy[1] is not None:
                configuration.proxy_headers = {"Proxy-Authorization": proxy[1].encode()}
    api = k8s.ApiClient(configuration=configuration)
    api.user_agent = user_agent
    # The proxy is read from the environment above, once per client (as client-go's transport
    # reads it per host); kubernetes_asyncio's session would look it (and ~/.netrc, which
    # client-go never reads) up again in a worker thread on every request.
    session = getattr(api.rest_client, "pool_manager", None)
    if isinstance(session, aiohttp.ClientSession) and hasattr(session, "_trust_env"):
        session._trust_env = False
    return api


def _env_proxy(host: str) -> tuple[URL, aiohttp.BasicAuth | None] | None:
    """HTTPS_PROXY / HTTP_PROXY for the server's URL unless NO_PROXY exempts it (None: no proxy)."""
    try:
        return get_env_proxy_for_url(URL(host))
    except (LookupError, ValueError):
        return None
