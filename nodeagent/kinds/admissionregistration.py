"""The admissionregistration.k8s.io kinds: v1 ValidatingAdmissionPolicy (+status) and
ValidatingAdmissionPolicyBinding.

Why served: kube-controller-manager's validatingadmissionpolicy-status controller lists and watches
policies; driver charts ship them. Validated as upstream (objects/admissionregistration.py) and
enforced by the API server's admission (apiserver/policy/).
Facts from k8s.io/kubernetes pkg/registry/admissionregistration/validatingadmissionpolicy(binding).
Pure: no I/O.
"""

from __future__ import annotations

from nodeagent.kinds.model import GENERATION_SPEC, STATUS_RESET_META, Kind

ADMISSION_V1 = "admissionregistration.k8s.io/v1"
ADMISSION = {"admissionregistration.k8s.io": "io.k8s.api.admissionregistration"}

VALIDATING_ADMISSION_POLICY = Kind(
    "ValidatingAdmissionPolicy", "validatingadmissionpolicies", namespaced=False, versions=(ADMISSION_V1,),
    definition=ADMISSION, categories=("api-extensions",), subresources=("status",), reset=STATUS_RESET_META,
    printer="validatingadmissionpolicy", store_hooks="admissionregistration", unconditional_update=False,
    generation=GENERATION_SPEC,
)
VALIDATING_ADMISSION_POLICY_BINDING = Kind(
    "ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybindings", namespaced=False,
    versions=(ADMISSION_V1,), definition=ADMISSION, categories=("api-extensions",),
    printer="validatingadmissionpolicybinding", store_hooks="admissionregistration", unconditional_update=False,
    generation=GENERATION_SPEC,
)

KINDS = (VALIDATING_ADMISSION_POLICY, VALIDATING_ADMISSION_POLICY_BINDING)
