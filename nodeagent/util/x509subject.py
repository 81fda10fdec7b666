"""Who a verified client certificate names, as upstream's x509 authenticator reads it.

Why one module: the embedded API server and the kubelet endpoint both authenticate client
certificates, and both must read a subject exactly as k8s.io/apiserver's
x509.CommonNameUserConversion does (CN the user, each O a group, the userId attribute the uid,
the certificate's SHA-256 the credential id). Each side wraps the answer in its own user type.
Pure: the subject in ssl's getpeercert() form and the DER bytes in, strings out.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

CREDENTIAL_ID = "authentication.kubernetes.io/credential-id"  # user.CredentialIDKey


@dataclass(frozen=True)
class SubjectIdentity:
    """The user a certificate names; `credential_id` is empty when its DER bytes were not given."""

    name: str
    uid: str
    groups: tuple[str, ...]
    credential_id: str


def identity_of_subject(
    subject: Sequence[Sequence[tuple[str, str]]], der: bytes | None = None
) -> SubjectIdentity | None:
    """The subject's identity; None without a common name (upstream refuses such a certificate)."""
    name = uid = ""
    groups: list[str] = []
    for rdn in subject:
        for key, value in rdn:
            if key == "commonName":
                name = value
            elif key == "organizationName":
                groups.append(value)
            elif key == "userId":
                uid = value
    if not name:
        return None
    credential = f"X509SHA256={hashlib.sha256(der).hexdigest()}" if der else ""
    return SubjectIdentity(name, uid, tuple(groups), credential)
