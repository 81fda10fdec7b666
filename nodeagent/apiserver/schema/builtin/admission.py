"""Schemas of admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy and its binding
(k8s.io/api admissionregistration/v1 types.go).

Why served: kube-controller-manager's validatingadmissionpolicy-status controller lists and watches
policies (and writes their typeChecking status); driver Helm charts ship policies. Stored and served
as data: nodeagent does not enforce them on writes (README says so).
"""

from __future__ import annotations

from nodeagent.apiserver.schema.builtin.dsl import arr, i64, kind, lmap, meta, obj, ref, s, sset, strs
from nodeagent.apiserver.schema.model import Schema

AR = "io.k8s.api.admissionregistration.v1."


def admission_definitions() -> dict[str, Schema]:
    rule = {
        "apiGroups": strs("API groups; * for all."), "apiVersions": strs("API versions; * for all."),
        "operations": strs("CREATE, UPDATE, DELETE, CONNECT or *."), "resources": strs("Resources; * for all."),
        "scope": s("Cluster, Namespaced or *."),
    }
    return {
        AR + "ValidatingAdmissionPolicy": kind("CEL validations of API requests.", {
            "spec": ref(AR + "ValidatingAdmissionPolicySpec", "The policy."),
            "status": ref(AR + "ValidatingAdmissionPolicyStatus", "Its type checking."),
        }),
        AR + "ValidatingAdmissionPolicySpec": obj("A policy's match and validations.", {
            "paramKind": ref(AR + "ParamKind", "The kind of its parameters."),
            "matchConstraints": ref(AR + "MatchResources", "The requests it applies to."),
            "validations": arr(ref(AR + "Validation"), "The CEL expressions to check.", atomic=True),
            "failurePolicy": s("Fail or Ignore."),
            "auditAnnotations": arr(ref(AR + "AuditAnnotation"), "Audit annotations to add.", atomic=True),
            "matchConditions": lmap(ref(AR + "MatchCondition"), "CEL conditions a request must meet.", "name"),
            "variables": lmap(ref(AR + "Variable"), "Named CEL expressions.", "name"),
        }),
        AR + "ParamKind": obj("A kind by apiVersion and kind.", {
            "apiVersion": s("The API version."), "kind": s("The kind."),
        }),
        AR + "MatchResources": obj("Which requests match.", {
            "namespaceSelector": meta("LabelSelector", "Namespaces by label."),
            "objectSelector": meta("LabelSelector", "Objects by label."),
            "resourceRules": arr(ref(AR + "NamedRuleWithOperations"), "Rules that match.", atomic=True),
            "excludeResourceRules": arr(ref(AR + "NamedRuleWithOperations"), "Rules that exclude.", atomic=True),
            "matchPolicy": s("Exact or Equivalent."),
        }),
        AR + "NamedRuleWithOperations": obj("Operations on resources, optionally by name.", {
            "resourceNames": strs("Names; empty for all."), **rule,
        }),
        AR + "Validation": obj("One CEL check.", {
            "expression": s("The CEL expression."), "message": s("The message when it fails."),
            "reason": s("The status reason when it fails."),
            "messageExpression": s("A CEL expression for the message."),
        }, ["expression"]),
        AR + "AuditAnnotation": obj("An audit annotation.", {
            "key": s("The key."), "valueExpression": s("A CEL expression for the value."),
        }, ["key", "valueExpression"]),
        AR + "MatchCondition": obj("A CEL condition.", {
            "name": s("The name."), "expression": s("The CEL expression."),
        }, ["name", "expression"]),
        AR + "Variable": obj("A named CEL expression.", {
            "name": s("The name."), "expression": s("The CEL expression."),
        }, ["name", "expression"]),
        AR + "ValidatingAdmissionPolicyStatus": obj("What the status controller found.", {
            "observedGeneration": i64("The generation checked."),
            "typeChecking": ref(AR + "TypeChecking", "Type checking results."),
            "conditions": lmap(meta("Condition"), "The conditions.", "type", strategy=""),
        }),
        AR + "TypeChecking": obj("Type checking results.", {
            "expressionWarnings": arr(ref(AR + "ExpressionWarning"), "Warnings per expression.", atomic=True),
        }),
        AR + "ExpressionWarning": obj("A type checking warning.", {
            "fieldRef": s("The expression's field path."), "warning": s("The warning."),
        }, ["fieldRef", "warning"]),
        AR + "ValidatingAdmissionPolicyBinding": kind("Binds a policy to parameters and a scope.", {
            "spec": ref(AR + "ValidatingAdmissionPolicyBindingSpec", "The binding."),
        }),
        AR + "ValidatingAdmissionPolicyBindingSpec": obj("A policy binding.", {
            "policyName": s("The policy's name."),
            "paramRef": ref(AR + "ParamRef", "The parameters."),
            "matchResources": ref(AR + "MatchResources", "Narrows the policy's match."),
            "validationActions": sset("Deny, Warn and/or Audit."),
        }),
        AR + "ParamRef": obj("Parameter objects by name or selector.", {
            "name": s("The name."), "namespace": s("The namespace."),
            "selector": meta("LabelSelector", "Parameters by label."),
            "parameterNotFoundAction": s("Allow or Deny."),
        }),
    }
