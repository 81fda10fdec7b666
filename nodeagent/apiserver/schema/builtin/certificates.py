"""Schemas of certificates.k8s.io/v1 CertificateSigningRequest and PodCertificateRequest
(k8s.io/api certificates/v1 types.go).

Why served: kube-controller-manager's csrapproving, csrcleaner and csrsigning controllers list
and watch CSRs, its podcertificaterequest cleaner lists PodCertificateRequests. nodeagent's nodes
use no certificates from them; they are stored and served as data for the real controllers.
"""

from __future__ import annotations

from nodeagent.apiserver.schema.builtin.dsl import arr, i32, kind, lmap, mapof, meta, obj, ref, s, smap, strs, time
from nodeagent.apiserver.schema.model import Schema

C1 = "io.k8s.api.certificates.v1."


def certificates_definitions() -> dict[str, Schema]:
    return {
        C1 + "CertificateSigningRequest": kind("A request for a certificate from a signer.", {
            "spec": ref(C1 + "CertificateSigningRequestSpec", "The request."),
            "status": ref(C1 + "CertificateSigningRequestStatus", "Approval and the issued certificate."),
        }, ["spec"]),
        C1 + "CertificateSigningRequestSpec": obj("A certificate request.", {
            "request": s("The PEM-encoded CERTIFICATE REQUEST (base64 in JSON).", fmt="byte"),
            "signerName": s("The signer to ask."),
            "expirationSeconds": i32("The validity asked for."),
            "usages": strs("Key usages asked for."),
            "username": s("Who asked (set by the API server)."),
            "uid": s("Their uid (set by the API server)."),
            "groups": strs("Their groups (set by the API server)."),
            "extra": mapof(arr(s()), "Their extra attributes (set by the API server)."),
        }, ["request", "signerName"]),
        C1 + "CertificateSigningRequestStatus": obj("Approval and the issued certificate.", {
            "conditions": lmap(ref(C1 + "CertificateSigningRequestCondition"), "Approved, Denied, Failed.",
                               "type", strategy=""),
            "certificate": s("The issued certificate, PEM (base64 in JSON).", fmt="byte"),
        }),
        C1 + "CertificateSigningRequestCondition": obj("One state of a request.", {
            "type": s("Approved, Denied or Failed."), "status": s("True, False or Unknown."),
            "reason": s("Why, CamelCase."), "message": s("Why, for humans."),
            "lastUpdateTime": time("When it was last updated."),
            "lastTransitionTime": time("When it last changed."),
        }, ["type", "status"]),
        C1 + "PodCertificateRequest": kind("A pod's request for a certificate (kubelet-made).", {
            "spec": ref(C1 + "PodCertificateRequestSpec", "The request."),
            "status": ref(C1 + "PodCertificateRequestStatus", "The signer's answer."),
        }, ["spec"]),
        C1 + "PodCertificateRequestSpec": obj("A pod certificate request.", {
            "signerName": s("The signer to ask."),
            "podName": s("The pod."), "podUID": s("Its uid."),
            "serviceAccountName": s("Its service account."), "serviceAccountUID": s("Its uid."),
            "nodeName": s("The pod's node."), "nodeUID": s("Its uid."),
            "maxExpirationSeconds": i32("The longest validity accepted."),
            "stubPKCS10Request": s("A PKCS#10 request proving the key (base64 in JSON).", fmt="byte"),
            "unverifiedUserAnnotations": smap("Annotations for the signer, not checked."),
        }, ["signerName", "podName", "podUID", "serviceAccountName", "serviceAccountUID", "nodeName", "nodeUID",
            "stubPKCS10Request"]),
        C1 + "PodCertificateRequestStatus": obj("The signer's answer.", {
            "conditions": lmap(meta("Condition"), "Issued, Denied, Failed.", "type"),
            "certificateChain": s("The issued chain, PEM."),
            "notBefore": time("Validity start."), "beginRefreshAt": time("When the kubelet should renew."),
            "notAfter": time("Validity end."),
        }),
    }
