"""The certificates.k8s.io kinds: v1 CertificateSigningRequest (csr; +status, +approval) and
PodCertificateRequest (+status).

Why served: kube-controller-manager's csrapproving, csrcleaner and csrsigning controllers list and
watch CSRs, its podcertificaterequest cleaner PodCertificateRequests. Facts from k8s.io/kubernetes
pkg/registry/certificates/{certificates,podcertificaterequest}: a CSR's approval subresource writes
only status.conditions, its status subresource the rest of the status. Pure: no I/O.
"""

from __future__ import annotations

from nodeagent.kinds.model import STATUS_RESET, STATUS_RESET_META, Kind, path

CERTIFICATES_V1 = "certificates.k8s.io/v1"
CERTIFICATES = {"certificates.k8s.io": "io.k8s.api.certificates"}

CERTIFICATE_SIGNING_REQUEST = Kind(
    "CertificateSigningRequest", "certificatesigningrequests", namespaced=False, versions=(CERTIFICATES_V1,),
    definition=CERTIFICATES, short_names=("csr",), subresources=("approval", "status"), reset=STATUS_RESET,
    field_labels={"spec.signerName": path("spec", "signerName")}, printer="certificatesigningrequest",
    store_hooks="certificates",
)
POD_CERTIFICATE_REQUEST = Kind(
    "PodCertificateRequest", "podcertificaterequests", namespaced=True, versions=(CERTIFICATES_V1,),
    unconditional_update=False,
    definition=CERTIFICATES, subresources=("status",), reset=STATUS_RESET_META,
    field_labels={"spec.signerName": path("spec", "signerName"), "spec.podName": path("spec", "podName"),
                  "spec.nodeName": path("spec", "nodeName")},
    printer="podcertificaterequest", store_hooks="podcertificates", strategy="podcertificaterequest",
)

KINDS = (CERTIFICATE_SIGNING_REQUEST, POD_CERTIFICATE_REQUEST)
