"""Protobuf bodies of networking.k8s.io/v1 Ingress, IngressClass, NetworkPolicy and node.k8s.io/v1
RuntimeClass decode to what encoding/json writes for the same Go object: what client-go's typed
clients (an ingress controller's status writes) send for them.

The bodies were captured from k8s.io/api v0.37.2: `obj.Marshal()` wrapped in runtime.Unknown with the
object's apiVersion and kind behind the `k8s\\x00` magic (what apimachinery's protobuf serializer
writes), next to `json.Marshal(obj)` of the same object; each object sets most fields of its kind
(an inline IngressRuleValue, IntOrString ports of both kinds, IngressClassParametersReference's
`aPIGroup` field).
"""

from __future__ import annotations

import orjson
import pytest

from nodeagent.apiserver.protobuf import decoder
from tests.unit.apiserver.test_protobuf import no_nulls

GOLDEN = [
    pytest.param(
        "6b3873000a1f0a146e6574776f726b696e672e6b38732e696f2f76311207496e677265737312c1010a130a016912001a026e"
        "7322002a0032003800420012760a0b1a090a016712014b1a016e12120a0d612e6578616d706c652e636f6d1201741a500a0d"
        "612e6578616d706c652e636f6d123f0a3d0a1a0a012f120d220b0a0377656212040a0010501a065072656669780a1f0a022f"
        "781211220f0a0377656212080a046874747010001a065072656669782201631a320a300a1a0a093139322e302e322e311200"
        "220b08bb0312035443501a01650a120a00120e6c622e6578616d706c652e636f6d1a002200",
        '{"metadata":{"name":"i","namespace":"ns"},"spec":{"ingressClassName":"c","defaultBackend":{"resource'
        '":{"apiGroup":"g","kind":"K","name":"n"}},"tls":[{"hosts":["a.example.com"],"secretName":"t"}],"rule'
        's":[{"host":"a.example.com","http":{"paths":[{"path":"/","pathType":"Prefix","backend":{"service":{"'
        'name":"web","port":{"number":80}}}},{"path":"/x","pathType":"Prefix","backend":{"service":{"name":"w'
        'eb","port":{"name":"http"}}}}]}}]},"status":{"loadBalancer":{"ingress":[{"ip":"192.0.2.1","ports":[{'
        '"port":443,"protocol":"TCP","error":"e"}]},{"hostname":"lb.example.com"}]}}}',
        id='Ingress'),
    pytest.param(
        "6b3873000a240a146e6574776f726b696e672e6b38732e696f2f7631120c496e6772657373436c617373123e0a110a016312"
        "001a0022002a0032003800420012290a0d6578616d706c652e636f6d2f6312180a016712014b1a017022094e616d65737061"
        "63652a026e731a002200",
        '{"metadata":{"name":"c"},"spec":{"controller":"example.com/c","parameters":{"apiGroup":"g","kind":"K'
        '","name":"p","scope":"Namespace","namespace":"ns"}}}',
        id='IngressClass'),
    pytest.param(
        "6b3873000a250a146e6574776f726b696e672e6b38732e696f2f7631120d4e6574776f726b506f6c6963791286010a140a02"
        "6e7012001a026e7322002a00320038004200126e0a0c0a0a0a03617070120377656212470a110a03544350120a080110001a"
        "04687474700a0f0a035443501206080010501a00185a121b1a190a0a31302e302e302e302f38120b31302e312e302e302f31"
        "3612040a0012001a0412020a002207496e677265737322064567726573731a002200",
        '{"metadata":{"name":"np","namespace":"ns"},"spec":{"podSelector":{"matchLabels":{"app":"web"}},"ingr'
        'ess":[{"ports":[{"protocol":"TCP","port":"http"},{"protocol":"TCP","port":80,"endPort":90}],"from":['
        '{"ipBlock":{"cidr":"10.0.0.0/8","except":["10.1.0.0/16"]}},{"podSelector":{},"namespaceSelector":{}}'
        ']}],"egress":[{"to":[{"podSelector":{}}]}],"policyTypes":["Ingress","Egress"]}}',
        id='NetworkPolicy'),
    pytest.param(
        "6b3873000a1e0a0e6e6f64652e6b38732e696f2f7631120c52756e74696d65436c61737312520a120a02726312001a002200"
        "2a00320038004200120572756e73631a0f0a0d0a0363707512060a043235306d22240a060a0161120162121a0a016b120545"
        "7175616c1a017622094e6f45786563757465281e1a002200",
        '{"metadata":{"name":"rc"},"handler":"runsc","overhead":{"podFixed":{"cpu":"250m"}},"scheduling":{"no'
        'deSelector":{"a":"b"},"tolerations":[{"key":"k","operator":"Equal","value":"v","effect":"NoExecute",'
        '"tolerationSeconds":30}]}}',
        id='RuntimeClass'),
]


@pytest.mark.parametrize(("body_hex", "go_json"), GOLDEN)
def test_go_bodies_decode_to_what_encoding_json_writes(body_hex: str, go_json: str) -> None:
    obj, api_version, kind = decoder.decode(bytes.fromhex(body_hex))
    assert obj == {"apiVersion": api_version, "kind": kind, **no_nulls(orjson.loads(go_json))}
