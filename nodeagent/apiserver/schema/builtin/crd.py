"""Schemas of apiextensions.k8s.io/v1 CustomResourceDefinition and JSONSchemaProps.

Why apart: JSONSchemaProps is recursive (properties, items, allOf, ...) so it refers to itself
through refs; the "or" types (JSONSchemaPropsOrArray, ...OrBool, JSON) accept any value, as
upstream's custom JSON unmarshalling does.
"""

from __future__ import annotations

from nodeagent.apiserver.schema.builtin.dsl import (
    arr,
    b,
    i32,
    i64,
    kind,
    lmap,
    mapof,
    num,
    obj,
    ref,
    s,
    strs,
    time,
)
from nodeagent.apiserver.schema.model import Schema

P = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1."


def _r(name: str, desc: str = "") -> Schema:
    return ref(P + name, desc)


def crd_definitions() -> dict[str, Schema]:
    props = "JSONSchemaProps"
    return {
        P + "CustomResourceDefinition": kind("Defines a new resource type served by the API server.", {
            "spec": _r("CustomResourceDefinitionSpec", "The resource type to serve."),
            "status": _r("CustomResourceDefinitionStatus", "Whether it is established and its accepted names."),
        }, ["spec"]),
        P + "CustomResourceDefinitionSpec": obj("The resource type a CRD defines.", {
            "group": s("API group of the resource."),
            "names": _r("CustomResourceDefinitionNames", "Names of the resource and its kind."),
            "scope": s("Cluster or Namespaced.", enum=["Cluster", "Namespaced"]),
            "versions": arr(_r("CustomResourceDefinitionVersion"), "Served versions, each with its schema.",
                            atomic=True),
            "conversion": _r("CustomResourceConversion", "How objects convert between versions."),
            "preserveUnknownFields": b("Deprecated: keep unknown fields; must be false."),
        }, ["group", "names", "scope", "versions"]),
        P + "CustomResourceDefinitionNames": obj("Names of a custom resource.", {
            "plural": s("Plural name, used in URLs."),
            "singular": s("Singular name; the lowercased kind by default."),
            "shortNames": strs("Short aliases for kubectl."),
            "kind": s("CamelCase kind of objects."),
            "listKind": s("Kind of lists; <kind>List by default."),
            "categories": strs("Groups the resource belongs to, e.g. all."),
        }, ["plural", "kind"]),
        P + "CustomResourceDefinitionVersion": obj("One served version of a custom resource.", {
            "name": s("Version name, e.g. v1 or v1beta1."),
            "served": b("Whether the version is served."),
            "storage": b("Whether objects are stored in this version; exactly one is."),
            "deprecated": b("Whether clients get a deprecation warning."),
            "deprecationWarning": s("Warning text returned instead of the default."),
            "schema": _r("CustomResourceValidation", "Schema of objects in this version."),
            "subresources": _r("CustomResourceSubresources", "Status and scale subresources."),
            "additionalPrinterColumns": arr(_r("CustomResourceColumnDefinition"), "Extra kubectl get columns.",
                                            atomic=True),
            "selectableFields": arr(_r("SelectableField"), "Fields usable in field selectors.", atomic=True),
        }, ["name", "served", "storage"]),
        P + "CustomResourceValidation": obj("Schema of a custom resource version.", {
            "openAPIV3Schema": _r(props, "Structural OpenAPI v3 schema of objects."),
        }),
        P + "CustomResourceSubresources": obj("Subresources of a custom resource.", {
            "status": _r("CustomResourceSubresourceStatus", "Serve /status; spec and status change apart."),
            "scale": _r("CustomResourceSubresourceScale", "Serve /scale."),
        }),
        P + "CustomResourceSubresourceStatus": obj("Enables the status subresource; has no fields.", {},
                                                   preserve_unknown_fields=True),
        P + "CustomResourceSubresourceScale": obj("Paths of the scale subresource.", {
            "specReplicasPath": s("JSON path of the desired replicas, under .spec."),
            "statusReplicasPath": s("JSON path of the observed replicas, under .status."),
            "labelSelectorPath": s("JSON path of the label selector string, under .status or .spec."),
        }, ["specReplicasPath", "statusReplicasPath"]),
        P + "CustomResourceColumnDefinition": obj("An extra kubectl get column.", {
            "name": s("Column header."),
            "type": s("OpenAPI type: integer, number, string, boolean or date."),
            "format": s("OpenAPI format of the value."),
            "description": s("Help text of the column."),
            "priority": i32("0 shows in the default view; higher only with -o wide."),
            "jsonPath": s("Simple JSON path evaluated on each object."),
        }, ["name", "type", "jsonPath"]),
        P + "SelectableField": obj("A field usable in field selectors.", {
            "jsonPath": s("Simple JSON path of a string, integer or boolean field."),
        }, ["jsonPath"]),
        P + "CustomResourceConversion": obj("How objects convert between versions.", {
            "strategy": s("None or Webhook.", enum=["None", "Webhook"]),
            "webhook": _r("WebhookConversion", "The webhook, for strategy Webhook."),
        }, ["strategy"]),
        P + "WebhookConversion": obj("A conversion webhook.", {
            "clientConfig": _r("WebhookClientConfig", "How to call the webhook."),
            "conversionReviewVersions": strs("ConversionReview versions the webhook accepts, preferred first."),
        }, ["conversionReviewVersions"]),
        P + "WebhookClientConfig": obj("How to reach a webhook.", {
            "url": s("URL of the webhook, https://host:port/path."),
            "service": _r("ServiceReference", "A Service in the cluster."),
            "caBundle": s("PEM CA bundle to verify the server, base64.", fmt="byte"),
        }),
        P + "ServiceReference": obj("A Service endpoint.", {
            "namespace": s("Service namespace."),
            "name": s("Service name."),
            "path": s("URL path."),
            "port": i32("Port; 443 by default."),
        }, ["namespace", "name"]),
        P + "CustomResourceDefinitionStatus": obj("Observed state of a CRD.", {
            "conditions": lmap(_r("CustomResourceDefinitionCondition"), "Established, NamesAccepted, ...", "type",
                               strategy=""),
            "acceptedNames": _r("CustomResourceDefinitionNames", "Names actually served."),
            "storedVersions": strs("Versions objects have ever been stored in."),
            "observedGeneration": i64("Generation the status reflects."),
        }),
        P + "CustomResourceDefinitionCondition": obj("A condition of a CRD.", {
            "type": s("Established, NamesAccepted, NonStructuralSchema, Terminating, ..."),
            "status": s("True, False or Unknown."),
            "lastTransitionTime": time("When the status last changed."),
            "reason": s("CamelCase reason."),
            "message": s("Human-readable detail."),
            "observedGeneration": i64("Generation the condition reflects."),
        }, ["type", "status"]),
        P + props: obj("A JSON-Schema (OpenAPI v3) schema with Kubernetes extensions.", {
            "id": s("Schema id."),
            "$schema": s("JSON-Schema dialect."),
            "$ref": s("Reference to another schema; not allowed in CRDs."),
            "description": s("Help text, shown by kubectl explain."),
            "type": s("object, array, string, integer, number or boolean."),
            "format": s("Format of the value, e.g. date-time or int32."),
            "title": s("Title."),
            "default": _r("JSON", "Value used when the field is absent."),
            "maximum": num("Largest allowed number."),
            "exclusiveMaximum": b("Whether maximum itself is excluded."),
            "minimum": num("Smallest allowed number."),
            "exclusiveMinimum": b("Whether minimum itself is excluded."),
            "maxLength": i64("Most characters."),
            "minLength": i64("Fewest characters."),
            "pattern": s("Regular expression strings must match."),
            "maxItems": i64("Most items."),
            "minItems": i64("Fewest items."),
            "uniqueItems": b("Items must be unique; not allowed in CRDs (use x-kubernetes-list-type: set)."),
            "multipleOf": num("Numbers must be multiples of this."),
            "enum": arr(_r("JSON"), "Allowed values.", atomic=True),
            "maxProperties": i64("Most properties."),
            "minProperties": i64("Fewest properties."),
            "required": strs("Properties that must be present."),
            "items": _r("JSONSchemaPropsOrArray", "Schema of array items."),
            "allOf": arr(_r(props), "Schemas that must all hold.", atomic=True),
            "oneOf": arr(_r(props), "Schemas of which exactly one holds.", atomic=True),
            "anyOf": arr(_r(props), "Schemas of which at least one holds.", atomic=True),
            "not": _r(props, "Schema that must not hold."),
            "properties": mapof(_r(props), "Schemas of known properties."),
            "additionalProperties": _r("JSONSchemaPropsOrBool", "Schema of other properties (maps), or false."),
            "patternProperties": mapof(_r(props), "Schemas by property name pattern."),
            "dependencies": mapof(_r("JSONSchemaPropsOrStringArray"), "Property dependencies."),
            "additionalItems": _r("JSONSchemaPropsOrBool", "Schema of extra items."),
            "definitions": mapof(_r(props), "Named schemas."),
            "externalDocs": _r("ExternalDocumentation", "Link to more documentation."),
            "example": _r("JSON", "An example value."),
            "nullable": b("Whether null is allowed (and kept)."),
            "x-kubernetes-preserve-unknown-fields": b("Keep fields not in the schema instead of pruning them."),
            "x-kubernetes-embedded-resource": b("The value is an object with apiVersion, kind and metadata."),
            "x-kubernetes-int-or-string": b("The value is an integer or a string."),
            "x-kubernetes-list-map-keys": strs("Keys of a map list."),
            "x-kubernetes-list-type": s("atomic, set or map.", enum=["atomic", "map", "set"]),
            "x-kubernetes-map-type": s("granular or atomic.", enum=["atomic", "granular"]),
            "x-kubernetes-validations": lmap(_r("ValidationRule"), "CEL validation rules.", "rule"),
        }),
        P + "ValidationRule": obj("A CEL validation rule.", {
            "rule": s("CEL expression over self (and oldSelf for transitions)."),
            "message": s("Message when the rule fails."),
            "messageExpression": s("CEL expression giving the message."),
            "reason": s("FieldValueInvalid, FieldValueForbidden, FieldValueRequired or FieldValueDuplicate."),
            "fieldPath": s("Field the error is reported on."),
            "optionalOldSelf": b("Run the rule on create too, with oldSelf absent."),
        }, ["rule"]),
        P + "ExternalDocumentation": obj("A link to documentation.", {
            "description": s("What the link is."), "url": s("The URL."),
        }),
        P + "JSON": Schema(description="Any JSON value."),
        P + "JSONSchemaPropsOrArray": Schema(description="A schema, or a list of schemas."),
        P + "JSONSchemaPropsOrBool": Schema(description="A schema, or a boolean."),
        P + "JSONSchemaPropsOrStringArray": Schema(description="A schema, or a list of property names."),
    }

