"""apiextensions.k8s.io/v1 CustomResourceDefinition (k8s.io/apiextensions-apiserver pkg/apis/apiextensions/v1
generated.proto) and apiregistration.k8s.io/v1 APIService (k8s.io/kube-aggregator).

Why: kube-apiserver answers both in protobuf (client-go's typed apiextensions and aggregator clients
ask for it), and a CRD's schema is the one recursive message of the API: JSONSchemaProps holds
JSONSchemaProps in its properties, items, allOf... Four of its types have a JSON form unlike their
message (marshal.go's MarshalJSON/UnmarshalJSON), so the tables name them as builtins of the
notation: `JSON` (any JSON value, carried as its text in `raw`), `JSONSchemaPropsOrArray` (a schema
or an array of schemas), `JSONSchemaPropsOrBool` (a schema or a boolean) and
`JSONSchemaPropsOrStringArray` (a schema or an array of strings); the encoder and the decoder write
and read them around the package's own JSONSchemaProps. The JSON names that are not the proto
names (`$schema`, `$ref`, `x-kubernetes-*`) are the tables' names, as everywhere the JSON one.
Notation: nodeagent.protowire.notation.
"""

from __future__ import annotations

from nodeagent.protowire.notation import package

APIEXTENSIONS_V1 = package({
    "CustomResourceDefinition": """
        1 metadata meta.ObjectMeta; 2 spec CustomResourceDefinitionSpec; 3 status CustomResourceDefinitionStatus""",
    "CustomResourceDefinitionSpec": """
        1 group string!; 3 names CustomResourceDefinitionNames; 4 scope string!
        7 versions []CustomResourceDefinitionVersion; 9 conversion CustomResourceConversion*
        10 preserveUnknownFields bool""",
    "CustomResourceConversion": "1 strategy string!; 2 webhook WebhookConversion*",
    "WebhookConversion": "2 clientConfig WebhookClientConfig*; 3 conversionReviewVersions []string",
    "WebhookClientConfig": "3 url string?; 1 service ServiceReference*; 2 caBundle bytes",
    "ServiceReference": "1 namespace string!; 2 name string!; 3 path string?; 4 port int32?",
    "CustomResourceDefinitionVersion": """
        1 name string!; 2 served bool!; 3 storage bool!; 7 deprecated bool; 8 deprecationWarning string?
        4 schema CustomResourceValidation*; 5 subresources CustomResourceSubresources*
        6 additionalPrinterColumns []CustomResourceColumnDefinition; 9 selectableFields []SelectableField""",
    "SelectableField": "1 jsonPath string!",
    "CustomResourceColumnDefinition": """
        1 name string!; 2 type string!; 3 format string; 4 description string; 5 priority int32
        6 jsonPath string!""",
    "CustomResourceDefinitionNames": """
        1 plural string!; 2 singular string; 3 shortNames []string; 4 kind string!; 5 listKind string
        6 categories []string""",
    "CustomResourceDefinitionCondition": """
        1 type string!; 2 status string!; 3 lastTransitionTime Time; 4 reason string; 5 message string
        6 observedGeneration int64""",
    "CustomResourceDefinitionStatus": """
        1 conditions []CustomResourceDefinitionCondition; 2 acceptedNames CustomResourceDefinitionNames
        3 storedVersions []string; 4 observedGeneration int64""",
    "CustomResourceValidation": "1 openAPIV3Schema JSONSchemaProps*",
    "CustomResourceSubresources": """
        1 status CustomResourceSubresourceStatus*; 2 scale CustomResourceSubresourceScale*""",
    "CustomResourceSubresourceStatus": "",
    "CustomResourceSubresourceScale": """
        1 specReplicasPath string!; 2 statusReplicasPath string!; 3 labelSelectorPath string?""",
    "JSONSchemaProps": """
        1 id string; 2 $schema string; 3 $ref string?; 4 description string; 5 type string; 6 format string
        7 title string; 8 default JSON*; 9 maximum double?; 10 exclusiveMaximum bool; 11 minimum double?
        12 exclusiveMinimum bool; 13 maxLength int64?; 14 minLength int64?; 15 pattern string
        16 maxItems int64?; 17 minItems int64?; 18 uniqueItems bool; 19 multipleOf double?; 20 enum []JSON
        21 maxProperties int64?; 22 minProperties int64?; 23 required []string
        24 items JSONSchemaPropsOrArray*; 25 allOf []JSONSchemaProps; 26 oneOf []JSONSchemaProps
        27 anyOf []JSONSchemaProps; 28 not JSONSchemaProps*; 29 properties {}JSONSchemaProps
        30 additionalProperties JSONSchemaPropsOrBool*; 31 patternProperties {}JSONSchemaProps
        32 dependencies {}JSONSchemaPropsOrStringArray; 33 additionalItems JSONSchemaPropsOrBool*
        34 definitions {}JSONSchemaProps; 35 externalDocs ExternalDocumentation*; 36 example JSON*
        37 nullable bool; 38 x-kubernetes-preserve-unknown-fields bool?; 39 x-kubernetes-embedded-resource bool
        40 x-kubernetes-int-or-string bool; 41 x-kubernetes-list-map-keys []string
        42 x-kubernetes-list-type string?; 43 x-kubernetes-map-type string?
        44 x-kubernetes-validations []ValidationRule""",
    "ExternalDocumentation": "1 description string; 2 url string",
    "ValidationRule": """
        1 rule string!; 2 message string; 3 messageExpression string; 4 reason string?; 5 fieldPath string
        6 optionalOldSelf bool?""",
})

APIREGISTRATION_V1 = package({
    "APIService": "1 metadata meta.ObjectMeta; 2 spec APIServiceSpec; 3 status APIServiceStatus",
    "APIServiceSpec": """
        1 service ServiceReference*; 2 group string; 3 version string; 4 insecureSkipTLSVerify bool
        5 caBundle bytes; 7 groupPriorityMinimum int32!; 8 versionPriority int32!""",
    "ServiceReference": "1 namespace string; 2 name string; 3 port int32?",
    "APIServiceStatus": "1 conditions []APIServiceCondition",
    "APIServiceCondition": """
        1 type string!; 2 status string!; 3 lastTransitionTime Time; 4 reason string; 5 message string""",
})
