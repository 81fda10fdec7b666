"""nodeagent.apiserver.protobuf.decoder: Kubernetes protobuf request bodies -> the JSON the JSON path sees.

Two sources of truth: bodies captured from k8s.io/apimachinery v0.34's protobuf serializer (the
one client-go's typed clients use) next to encoding/json's output for the same Go object, and
hand-encoded bodies (a tiny encoder below) for the presence rules, times, maps and errors.
"""

from __future__ import annotations

import base64
from typing import Any

import orjson
import pytest

from nodeagent.apiserver.protobuf import decoder, encoding
from nodeagent.apiserver.protobuf.kinds import KINDS, kind_message
from nodeagent.apiserver.schema.builtin import BUILTIN_GVK
from nodeagent.protowire.packages import PACKAGES

# --- a tiny encoder ---


def varint(n: int) -> bytes:
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def f(num: int, value: bytes | str | int | bool) -> bytes:
    """One field: an int or bool as a varint, str/bytes length-delimited."""
    if isinstance(value, int):
        return varint(num << 3) + varint(int(value))
    data = value.encode() if isinstance(value, str) else value
    return varint(num << 3 | 2) + varint(len(data)) + data


def entry(num: int, key: str, value: bytes | str | None) -> bytes:
    return f(num, f(1, key) + (f(2, value) if value is not None else b""))


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    return b"k8s\x00" + f(1, f(1, api_version) + f(2, kind)) + f(2, raw)


def quantity(text: str) -> bytes:
    return f(1, text)


def time(seconds: int, nanos: int = 0) -> bytes:
    return f(1, seconds) + (f(2, nanos) if nanos else b"")


def decoded(api_version: str, kind: str, raw: bytes) -> dict[str, Any]:
    obj, got_version, got_kind = decoder.decode(envelope(api_version, kind, raw))
    assert (obj.pop("apiVersion"), obj.pop("kind"), got_version, got_kind) == (api_version, kind, api_version, kind)
    return obj


def no_nulls(value: Any) -> Any:
    """encoding/json writes null for an unset Time or a nil slice without omitempty; the decoder
    leaves such fields out (the registry treats both alike)."""
    if isinstance(value, dict):
        return {k: no_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [no_nulls(v) for v in value]
    return value


# --- bodies captured from the Go encoder: (protobuf hex, encoding/json of the same object) ---

GOLDEN = [
    pytest.param(
        "6b3873000a0f0a0276311209436f6e6669674d6170129a010a7b0a01781202672d1a026e7322002a027531320231323803420050"
        "005a060a016112016262060a01631201646a130a044e6f64651a016e22026e752a02763130017201668a01350a016d1205417070"
        "6c791a027631220808d983e2b106100032084669656c647356313a0f0a0d7b22663a64617461223a7b7d7d420012060a01611201"
        "6212050a016512001a0a0a0362696e120300010220001a002200",
        '{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"x","generateName":"g-","namespace":"ns","u'
        'id":"u1","resourceVersion":"12","generation":3,"deletionGracePeriodSeconds":0,"labels":{"a":"b"},"an'
        'notations":{"c":"d"},"ownerReferences":[{"apiVersion":"v1","kind":"Node","name":"n","uid":"nu","cont'
        'roller":true}],"finalizers":["f"],"managedFields":[{"manager":"m","operation":"Apply","apiVersion":"'
        'v1","time":"2024-05-06T07:08:09Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{}}}]},"immutable":fa'
        'lse,"data":{"a":"b","e":""},"binaryData":{"bin":"AAEC"}}',
        id='v1/ConfigMap'),
    pytest.param(
        "6b3873000a0f0a02763112094e616d65737061636512440a110a017912001a0022002a00320038004200120c0a0a6b756265726e"
        "657465731a210a0641637469766512170a0154120454727565220808d983e2b10610002a0032001a002200",
        '{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"y"},"spec":{"finalizers":["kubernetes"]},"'
        'status":{"phase":"Active","conditions":[{"type":"T","status":"True","lastTransitionTime":"2024-05-06'
        'T07:08:09Z"}]}}',
        id='v1/Namespace'),
    pytest.param(
        "6b3873000a140a027631120e536572766963654163636f756e74122b0a110a017a12001a0022002a00320038004200120f0a0012"
        "001a017322002a0032003a001a030a017020001a002200",
        '{"kind":"ServiceAccount","apiVersion":"v1","metadata":{"name":"z"},"secrets":[{"name":"s"}],"imagePu'
        'llSecrets":[{"name":"p"}],"automountServiceAccountToken":false}',
        id='v1/ServiceAccount'),
    pytest.param(
        "6b3873000a130a027631120d5265736f7572636551756f7461125e0a110a017112001a0022002a0032003800420012470a0e0a03"
        "63707512070a05313530306d0a0c0a04706f647312040a023130120a426573744566666f72741a1b0a190a0d5072696f72697479"
        "436c6173731202496e1a04686967681a001a002200",
        '{"kind":"ResourceQuota","apiVersion":"v1","metadata":{"name":"q"},"spec":{"hard":{"cpu":"1500m","pod'
        's":"10"},"scopes":["BestEffort"],"scopeSelector":{"matchExpressions":[{"scopeName":"PriorityClass","'
        'operator":"In","values":["high"]}]}},"status":{}}',
        id='v1/ResourceQuota'),
    pytest.param(
        "6b3873000a0a0a02763112044e6f64651290020a110a016e12001a0022002a00320038004200124f0a0b31302e302e302e302f32"
        "3412001a017020012a1b0a016b12001a0a4e6f5363686564756c65220808d983e2b1061000320f120d0a01611201621a0022002a"
        "01633a0b31302e302e302e302f32341aa9010a0a0a0363707512030a0134120f0a066d656d6f727912050a033147691a0752756e"
        "6e696e67221f0a0552656164791204547275651a0808d983e2b106100022002a017232016d2a150a0a496e7465726e616c495012"
        "07312e322e332e3432050a03088a503a1e0a016d12001a0022002a0032003a0042004a005205616d6436345a02080042050a0169"
        "10054a017652070a017612022f645a0322016562060a00120210016a0208011a002200",
        '{"kind":"Node","apiVersion":"v1","metadata":{"name":"n"},"spec":{"podCIDR":"10.0.0.0/24","podCIDRs":'
        '["10.0.0.0/24"],"providerID":"p","unschedulable":true,"taints":[{"key":"k","effect":"NoSchedule","ti'
        'meAdded":"2024-05-06T07:08:09Z"}],"configSource":{"configMap":{"namespace":"a","name":"b","kubeletCo'
        'nfigKey":"c"}}},"status":{"capacity":{"cpu":"4"},"allocatable":{"memory":"1Gi"},"phase":"Running","c'
        'onditions":[{"type":"Ready","status":"True","lastHeartbeatTime":"2024-05-06T07:08:09Z","lastTransiti'
        'onTime":null,"reason":"r","message":"m"}],"addresses":[{"type":"InternalIP","address":"1.2.3.4"}],"d'
        'aemonEndpoints":{"kubeletEndpoint":{"Port":10250}},"nodeInfo":{"machineID":"m","systemUUID":"","boot'
        'ID":"","kernelVersion":"","osImage":"","containerRuntimeVersion":"","kubeletVersion":"","kubeProxyVe'
        'rsion":"","operatingSystem":"","architecture":"amd64","swap":{"capacity":0}},"images":[{"names":["i"'
        '],"sizeBytes":5}],"volumesInUse":["v"],"volumesAttached":[{"name":"v","devicePath":"/d"}],"config":{'
        '"error":"e"},"runtimeHandlers":[{"name":"","features":{"userNamespaces":true}}],"features":{"supplem'
        'entalGroupsPolicy":true}}}',
        id='v1/Node'),
    pytest.param(
        "6b3873000a0d0a027631120742696e64696e67122a0a130a017012001a026e7322002a0032003800420012130a044e6f64651200"
        "1a016e22002a0032003a001a002200",
        '{"kind":"Binding","apiVersion":"v1","metadata":{"name":"p","namespace":"ns"},"target":{"kind":"Node"'
        ',"name":"n"}}',
        id='v1/Binding'),
    pytest.param(
        "6b3873000a1f0a16636f6f7264696e6174696f6e2e6b38732e696f2f763112054c6561736512380a200a016c12001a0f6b756265"
        "2d6e6f64652d6c6561736522002a0032003800420012140a01681028220b08d983e2b106108094ef3a28001a002200",
        '{"kind":"Lease","apiVersion":"coordination.k8s.io/v1","metadata":{"name":"l","namespace":"kube-node-'
        'lease"},"spec":{"holderIdentity":"h","leaseDurationSeconds":40,"renewTime":"2024-05-06T07:08:09.1234'
        '56Z","leaseTransitions":0}}',
        id='v1/Lease'),
    pytest.param(
        "6b3873000a190a106576656e74732e6b38732e696f2f763112054576656e74127e0a130a016512001a026e7322002a0032003800"
        "4200120b08d983e2b106108094ef3a1a0f0800120b08d983e2b106108094ef3a2201632a01693201413a015242120a03506f6412"
        "001a017022002a0032003a004a120a044e6f646512001a0022002a0032003a0052016e5a064e6f726d616c62040a0012006a0072"
        "0078001a002200",
        '{"kind":"Event","apiVersion":"events.k8s.io/v1","metadata":{"name":"e","namespace":"ns"},"eventTime"'
        ':"2024-05-06T07:08:09.123456Z","series":{"count":0,"lastObservedTime":"2024-05-06T07:08:09.123456Z"}'
        ',"reportingController":"c","reportingInstance":"i","action":"A","reason":"R","regarding":{"kind":"Po'
        'd","name":"p"},"related":{"kind":"Node"},"note":"n","type":"Normal","deprecatedSource":{},"deprecate'
        'dFirstTimestamp":null,"deprecatedLastTimestamp":null}',
        id='events.k8s.io/v1/Event'),
    pytest.param(
        "6b3873000a230a127265736f757263652e6b38732e696f2f7631120d5265736f75726365536c69636512f9020a7b0a0178120267"
        "2d1a026e7322002a027531320231323803420050005a060a016112016262060a01631201646a130a044e6f64651a016e22026e75"
        "2a02763130017201668a01350a016d12054170706c791a027631220808d983e2b106100032084669656c647356313a0f0a0d7b22"
        "663a64617461223a7b7d7d420012f9010a016412070a0170100018011a016e280032c9010a0364657612070a0162120218001210"
        "0a0169120b10fbffffffffffffffff0112070a017312022200120c0a017612072a05312e302e301a2e0a036d656d12270a050a03"
        "314769121e0a050a033147691a050a03314769220e0a050a033147691a050a0331476922120a026373120c0a016312070a050a03"
        "31476932260a240a0a0a016b1202496e1a017612160a0d6d657461646174612e6e616d651202496e1a016e421a0a016b12001a09"
        "4e6f45786563757465220808d983e2b106100048015201615a0162600032060a0464657632380042100a026373120a0a01631205"
        "0a030a01321a002200",
        '{"kind":"ResourceSlice","apiVersion":"resource.k8s.io/v1","metadata":{"name":"x","generateName":"g-"'
        ',"namespace":"ns","uid":"u1","resourceVersion":"12","generation":3,"deletionGracePeriodSeconds":0,"l'
        'abels":{"a":"b"},"annotations":{"c":"d"},"ownerReferences":[{"apiVersion":"v1","kind":"Node","name":'
        '"n","uid":"nu","controller":true}],"finalizers":["f"],"managedFields":[{"manager":"m","operation":"A'
        'pply","apiVersion":"v1","time":"2024-05-06T07:08:09Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{'
        '}}}]},"spec":{"driver":"d","pool":{"name":"p","generation":0,"resourceSliceCount":1},"nodeName":"n",'
        '"allNodes":false,"devices":[{"name":"dev","attributes":{"b":{"bool":false},"i":{"int":-5},"s":{"stri'
        'ng":""},"v":{"version":"1.0.0"}},"capacity":{"mem":{"value":"1Gi","requestPolicy":{"default":"1Gi","'
        'validValues":["1Gi"],"validRange":{"min":"1Gi","step":"1Gi"}}}},"consumesCounters":[{"counterSet":"c'
        's","counters":{"c":{"value":"1Gi"}}}],"nodeSelector":{"nodeSelectorTerms":[{"matchExpressions":[{"ke'
        'y":"k","operator":"In","values":["v"]}],"matchFields":[{"key":"metadata.name","operator":"In","value'
        's":["n"]}]}]},"taints":[{"key":"k","effect":"NoExecute","timeAdded":"2024-05-06T07:08:09Z"}],"bindsT'
        'oNode":true,"bindingConditions":["a"],"bindingFailureConditions":["b"],"allowMultipleAllocations":fa'
        'lse},{"name":"dev2"}],"perDeviceNodeSelection":false,"sharedCounters":[{"name":"cs","counters":{"c":'
        '{"value":"2"}}}]}}',
        id='v1/ResourceSlice'),
    pytest.param(
        "6b3873000a230a127265736f757263652e6b38732e696f2f7631120d5265736f75726365436c61696d12d6030a130a016312001a"
        "026e7322002a0032003800420012b5010ab2010a500a0172124b0a02646312080a060a04747275651a0a4578616374436f756e74"
        "20002800321b0a016b12064578697374731a00220a4e6f5363686564756c6528003a0e0a0c0a036d656d12050a033147690a310a"
        "0272321a2b0a0173120264632203416c6c2802321b0a016b12064578697374731a00220a4e6f5363686564756c65280012080a01"
        "721203612f621a210a0172121c0a1a0a016412150a137b2261223a5b312c325d2c2262223a2263227d1a86020aa2010a6e0a3e0a"
        "01721201641a017022036465762800321b0a016b12064578697374731a00220a4e6f5363686564756c6528004a0173520c0a036d"
        "656d12050a03314769122c0a0946726f6d436c61696d1201721a1c0a1a0a016412150a137b2261223a5b312c325d2c2262223a22"
        "63227d1a260a240a0a0a016b1202496e1a017612160a0d6d657461646174612e6e616d651202496e1a016e2a0808d983e2b10610"
        "00120e0a001a04706f64732201702a0175224f0a01641201701a03646576221e0a0552656164791204547275651800220808d983"
        "e2b10610002a017232002a090a077b2278223a317d32140a0465746830120a312e322e332e342f32341a003a01731a002200",
        '{"kind":"ResourceClaim","apiVersion":"resource.k8s.io/v1","metadata":{"name":"c","namespace":"ns"},"'
        'spec":{"devices":{"requests":[{"name":"r","exactly":{"deviceClassName":"dc","selectors":[{"cel":{"ex'
        'pression":"true"}}],"allocationMode":"ExactCount","adminAccess":false,"tolerations":[{"key":"k","ope'
        'rator":"Exists","effect":"NoSchedule","tolerationSeconds":0}],"capacity":{"requests":{"mem":"1Gi"}}}'
        '},{"name":"r2","firstAvailable":[{"name":"s","deviceClassName":"dc","allocationMode":"All","count":2'
        ',"tolerations":[{"key":"k","operator":"Exists","effect":"NoSchedule","tolerationSeconds":0}]}]}],"co'
        'nstraints":[{"requests":["r"],"matchAttribute":"a/b"}],"config":[{"requests":["r"],"opaque":{"driver'
        '":"d","parameters":{"a":[1,2],"b":"c"}}}]}},"status":{"allocation":{"devices":{"results":[{"request"'
        ':"r","driver":"d","pool":"p","device":"dev","adminAccess":false,"tolerations":[{"key":"k","operator"'
        ':"Exists","effect":"NoSchedule","tolerationSeconds":0}],"shareID":"s","consumedCapacity":{"mem":"1Gi'
        '"}}],"config":[{"source":"FromClaim","requests":["r"],"opaque":{"driver":"d","parameters":{"a":[1,2]'
        ',"b":"c"}}}]},"nodeSelector":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"k","operator":"In","'
        'values":["v"]}],"matchFields":[{"key":"metadata.name","operator":"In","values":["n"]}]}]},"allocatio'
        'nTimestamp":"2024-05-06T07:08:09Z"},"reservedFor":[{"resource":"pods","name":"p","uid":"u"}],"device'
        's":[{"driver":"d","pool":"p","device":"dev","shareID":"s","conditions":[{"type":"Ready","status":"Tr'
        'ue","lastTransitionTime":"2024-05-06T07:08:09Z","reason":"r","message":""}],"data":{"x":1},"networkD'
        'ata":{"interfaceName":"eth0","ips":["1.2.3.4/24"]}}]}}',
        id='v1/ResourceClaim'),
    pytest.param(
        "6b3873000a210a127265736f757263652e6b38732e696f2f7631120b446576696365436c61737312610a120a02646312001a0022"
        "002a00320038004200124b0a180a160a146465766963652e647269766572203d3d20226422121e0a1c0a1a0a016412150a137b22"
        "61223a5b312c325d2c2262223a2263227d220f6578616d706c652e636f6d2f6770751a002200",
        '{"kind":"DeviceClass","apiVersion":"resource.k8s.io/v1","metadata":{"name":"dc"},"spec":{"selectors"'
        ':[{"cel":{"expression":"device.driver == \\"d\\""}}],"config":[{"opaque":{"driver":"d","parameters":{"'
        'a":[1,2],"b":"c"}}}],"extendedResourceName":"example.com/gpu"}}',
        id='v1/DeviceClass'),
    pytest.param(
        "6b3873000a2b0a127265736f757263652e6b38732e696f2f763112155265736f75726365436c61696d54656d706c61746512440a"
        "130a017412001a026e7322002a00320038004200122d0a180a0012001a0022002a003200380042005a060a016112016212110a0f"
        "0a0d0a017212080a0264631a0020001a002200",
        '{"kind":"ResourceClaimTemplate","apiVersion":"resource.k8s.io/v1","metadata":{"name":"t","namespace"'
        ':"ns"},"spec":{"metadata":{"labels":{"a":"b"}},"spec":{"devices":{"requests":[{"name":"r","exactly":'
        '{"deviceClassName":"dc"}}]}}}}',
        id='v1/ResourceClaimTemplate'),
    pytest.param(
        "6b3873000a280a177265736f757263652e6b38732e696f2f76316265746132120d5265736f75726365536c69636512320a110a01"
        "7312001a0022002a00320038004200121d0a016412070a0170100018012801320d0a016112080a017812032201791a002200",
        '{"kind":"ResourceSlice","apiVersion":"resource.k8s.io/v1beta2","metadata":{"name":"s"},"spec":{"driv'
        'er":"d","pool":{"name":"p","generation":0,"resourceSliceCount":1},"allNodes":true,"devices":[{"name"'
        ':"a","attributes":{"x":{"string":"y"}}}]}}',
        id='v1beta2/ResourceSlice'),
    pytest.param(
        "6b3873000a280a177265736f757263652e6b38732e696f2f76316265746131120d5265736f75726365536c69636512590a110a01"
        "7312001a0022002a0032003800420012440a016412070a0170100018011a016e280032310a0161122c0a070a017812021003120c"
        "0a016d12070a050a0331476930003a110a016b12001a0a4e6f5363686564756c651a002200",
        '{"kind":"ResourceSlice","apiVersion":"resource.k8s.io/v1beta1","metadata":{"name":"s"},"spec":{"driv'
        'er":"d","pool":{"name":"p","generation":0,"resourceSliceCount":1},"nodeName":"n","devices":[{"name":'
        '"a","basic":{"attributes":{"x":{"int":3}},"capacity":{"m":{"value":"1Gi"}},"allNodes":false,"taints"'
        ':[{"key":"k","effect":"NoSchedule"}]}}]}}',
        id='v1beta1/ResourceSlice'),
    pytest.param(
        "6b3873000a280a177265736f757263652e6b38732e696f2f76316265746131120d5265736f75726365436c61696d12690a110a01"
        "6312001a0022002a0032003800420012520a500a4e0a017212026463220a4578616374436f756e74280130013a280a0173120178"
        "220028003a0e0a0012064578697374731a002200420c0a0a0a016d12050a03314769420b0a016112001a00220028051a001a0022"
        "00",
        '{"kind":"ResourceClaim","apiVersion":"resource.k8s.io/v1beta1","metadata":{"name":"c"},"spec":{"devi'
        'ces":{"requests":[{"name":"r","deviceClassName":"dc","allocationMode":"ExactCount","count":1,"adminA'
        'ccess":true,"firstAvailable":[{"name":"s","deviceClassName":"x","tolerations":[{"operator":"Exists"}'
        '],"capacity":{"requests":{"m":"1Gi"}}}],"tolerations":[{"key":"a","tolerationSeconds":5}]}]}},"statu'
        's":{}}',
        id='v1beta1/ResourceClaim'),
    pytest.param(
        "6b3873000a230a127265736f757263652e6b38732e696f2f7631120d44656c6574654f7074696f6e73121b080012060a01751201"
        "35220a4261636b67726f756e642a03416c6c1a002200",
        '{"gracePeriodSeconds":0,"preconditions":{"uid":"u","resourceVersion":"5"},"propagationPolicy":"Backg'
        'round","dryRun":["All"]}',
        id='resource.k8s.io/v1/DeleteOptions'),
]


@pytest.mark.parametrize(("body_hex", "go_json"), GOLDEN)
def test_bodies_from_the_go_encoder_decode_to_what_encoding_json_writes(body_hex: str, go_json: str) -> None:
    obj, api_version, kind = decoder.decode(bytes.fromhex(body_hex))
    want = no_nulls(orjson.loads(go_json))
    # A DeleteOptions is encoded through the client's codec, which stamps its group version on the
    # envelope only; the Go struct (and so its JSON) has no TypeMeta.
    want.setdefault("apiVersion", api_version)
    want.setdefault("kind", kind)
    assert obj == want
    assert list(obj) == ["apiVersion", "kind", *[k for k in want if k not in ("apiVersion", "kind")]]


def test_delete_options_are_read_under_the_clients_group_version() -> None:
    for api_version in ("v1", "meta.k8s.io/v1", "resource.k8s.io/v1", "coordination.k8s.io/v1"):
        assert decoded(api_version, "DeleteOptions", f(1, 30)) == {"gracePeriodSeconds": 30}


META = f(1, "x") + f(3, "") + f(7, 0) + f(8, b"")  # namespace "", generation 0, empty creationTimestamp


@pytest.mark.parametrize(("api_version", "kind", "raw", "want"), [
    # omitempty zeros (namespace "", generation 0, an empty Time) are dropped as encoding/json does
    pytest.param("v1", "ConfigMap", f(1, META) + entry(2, "a", "b") + entry(2, "empty", ""),
                 {"metadata": {"name": "x"}, "data": {"a": "b", "empty": ""}}, id="omitempty-zeros-dropped"),
    # a map entry without its value holds the value's zero
    pytest.param("v1", "ConfigMap", f(1, f(1, "x")) + entry(2, "k", None) + entry(3, "b", b"\xff\x00"),
                 {"metadata": {"name": "x"}, "data": {"k": ""}, "binaryData": {"b": base64.b64encode(b"\xff\x00")
                                                                                .decode()}}, id="map-entries"),
    # the last occurrence of a singular field wins; repeated fields accumulate
    pytest.param("v1", "Namespace", f(1, f(1, "a") + f(1, "b") + f(14, "f1") + f(14, "f2")),
                 {"metadata": {"name": "b", "finalizers": ["f1", "f2"]}}, id="last-wins-repeated-accumulates"),
    # unknown field numbers are skipped, whatever their wire type
    pytest.param("v1", "Namespace", f(1, f(1, "a") + f(99, 7) + f(98, "zz")) + varint(20 << 3 | 5) + bytes(4)
                 + varint(21 << 3 | 1) + bytes(8), {"metadata": {"name": "a"}}, id="unknown-fields-skipped"),
    # pointer scalars keep their zero; a non-omitempty scalar is written even when absent
    pytest.param("coordination.k8s.io/v1", "Lease", f(2, f(2, 0) + f(5, 0) + f(1, "")),
                 {"spec": {"holderIdentity": "", "leaseDurationSeconds": 0, "leaseTransitions": 0}},
                 id="pointer-zeros-kept"),
    pytest.param("resource.k8s.io/v1", "ResourceSlice", f(2, f(2, b"") + f(5, 0)),
                 {"spec": {"driver": "", "pool": {"name": "", "generation": 0, "resourceSliceCount": 0},
                           "allNodes": False}}, id="non-omitempty-written"),
    # v1beta1's nodeName and allNodes are plain omitempty fields
    pytest.param("resource.k8s.io/v1beta1", "ResourceSlice", f(2, f(1, "d") + f(3, "") + f(5, 0)),
                 {"spec": {"driver": "d"}}, id="v1beta1-omitempty"),
    # negative numbers: int32 sign-extended to ten bytes, int64 attributes
    pytest.param("v1", "Event", f(8, -1) + f(1, f(10, -5)),
                 {"metadata": {"deletionGracePeriodSeconds": -5}, "count": -1, "reportingComponent": "",
                  "reportingInstance": ""}, id="negative-numbers"),
    pytest.param("resource.k8s.io/v1", "ResourceSlice",
                 f(2, f(6, f(1, "d") + f(2, f(1, "n") + f(2, f(2, -(1 << 63))))
                      + f(3, f(1, "mem") + f(2, f(1, quantity("1Gi")))) + f(3, f(1, "z") + f(2, b"")))),
                 {"spec": {"driver": "", "devices": [{"name": "d", "attributes": {"n": {"int": -(1 << 63)}},
                                                      "capacity": {"mem": {"value": "1Gi"}, "z": {}}}]}},
                 id="attributes-and-capacity"),
    # metav1.Time keeps whole seconds; MicroTime six fractional digits; Go's zero time is unset
    pytest.param("coordination.k8s.io/v1", "Lease",
                 f(1, f(8, time(1714979289, 999_999_999)) + f(9, time(-62135596800)))
                 + f(2, f(3, time(1714979289, 123_456_789)) + f(4, time(0, 1000))),
                 {"metadata": {"creationTimestamp": "2024-05-06T07:08:09Z"},
                  "spec": {"acquireTime": "2024-05-06T07:08:09.123456Z", "renewTime": "1970-01-01T00:00:00.000001Z"}},
                 id="times"),
    pytest.param("v1", "Event", f(6, time(-62135596800 + 86400)),
                 {"firstTimestamp": "0001-01-02T00:00:00Z", "reportingComponent": "", "reportingInstance": ""},
                 id="early-time"),
    # an inline DeviceConfiguration flattens into its parent; RawExtension and FieldsV1 carry JSON
    pytest.param("resource.k8s.io/v1", "DeviceClass",
                 f(1, f(17, f(1, "m") + f(7, f(1, b'{"f:spec":{}}')))) +
                 f(2, f(2, f(1, f(1, f(1, "drv") + f(2, f(1, b'{"a": [1, 2.5, null]}')))))),
                 {"metadata": {"managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {}}}]},
                  "spec": {"config": [{"opaque": {"driver": "drv", "parameters": {"a": [1, 2.5, None]}}}]}},
                 id="inline-and-raw-json"),
    pytest.param("resource.k8s.io/v1", "DeviceClass", f(2, f(2, f(1, f(1, f(1, "drv") + f(2, b""))))),
                 {"spec": {"config": [{"opaque": {"driver": "drv"}}]}}, id="empty-raw-extension"),
    # an empty Quantity message is the zero Quantity
    pytest.param("v1", "ResourceQuota", f(2, entry(1, "pods", b"") + entry(1, "cpu", quantity("1500m"))),
                 {"spec": {"hard": {"pods": "0", "cpu": "1500m"}}}, id="quantities"),
    # invalid UTF-8 is replaced, as encoding/json writes it
    pytest.param("v1", "Namespace", f(1, f(1, b"a\xffb")), {"metadata": {"name": "a\ufffdb"}}, id="bad-utf8"),
])
def test_decode_rules(api_version: str, kind: str, raw: bytes, want: dict[str, Any]) -> None:
    assert decoded(api_version, kind, raw) == want


@pytest.mark.parametrize(("body", "message"), [
    (b"", "empty data"),
    (b'{"kind":"ConfigMap"}', "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"),
    (b"k8s\x00", "empty body"),
    (b"k8s\x00\x0a", "truncated varint at offset 5"),
    (b"k8s\x00\x0a\x80", "truncated varint at offset 5"),
    (b"k8s\x00\x08" + b"\xff" * 10 + b"\x01", "varint longer than 10 bytes at offset 5"),
    (b"k8s\x00\x0a\x05\x0a\x02v1", "truncated length-delimited field 1 at offset 6: 5 bytes announced, 4 left"),
    (b"k8s\x00\x0b", "unsupported wire type 3 for field 1 at offset 4"),
    (b"k8s\x00\x00", "illegal field number 0 at offset 4"),
    (b"k8s\x00\x08\x01", "Unknown.typeMeta: wire type 0 where 2 was expected, at offset 5"),
    (b"k8s\x00" + f(2, b""), "the protobuf envelope names no kind"),
    (envelope("v1", "ConfigMap", b"") + f(3, "gzip"), "unsupported content encoding 'gzip'"),
    (envelope("v1", "ConfigMap", f(1, 5)), "ConfigMap.metadata: wire type 0 where 2 was expected, at offset 24"),
    (envelope("v1", "ConfigMap", f(1, f(1, 5))), "ObjectMeta.name: wire type 0 where 2 was expected, at offset 26"),
    (envelope("v1", "Namespace", f(1, f(8, f(1, "x")))),
     "ObjectMeta.creationTimestamp: wire type 2 where 0 was expected, at offset 29"),
    (envelope("v1", "Event", f(6, f(1, 1 << 62))), "Event.firstTimestamp: time 4611686018427387904s is out of range"),
    (envelope("resource.k8s.io/v1", "DeviceClass", f(2, f(2, f(1, f(1, f(2, f(1, b"{nope"))))))),
     "OpaqueDeviceConfiguration.parameters: the embedded RawExtension is not JSON: "),
])
def test_malformed_bodies(body: bytes, message: str) -> None:
    with pytest.raises(decoder.ProtobufError) as err:
        decoder.decode(body)
    assert not isinstance(err.value, decoder.UnknownKind)
    assert str(err.value).startswith(message) and (message.endswith(": ") or str(err.value) == message)


@pytest.mark.parametrize(("api_version", "kind"), [
    ("apiextensions.k8s.io/v1beta1", "CustomResourceDefinition"), ("v1", "Foo"),
    ("resource.k8s.io/v1alpha3", "ResourceSlice"), ("example.com/v1", "Widget"),
    ("", "ConfigMap"), ("v1", "ResourceSlice"),
])
def test_unknown_kinds(api_version: str, kind: str) -> None:
    with pytest.raises(decoder.UnknownKind) as err:
        decoder.decode(envelope(api_version, kind, f(1, f(1, "x"))))
    assert (err.value.api_version, err.value.kind) == (api_version, kind)
    assert str(err.value) == f"the server cannot decode protobuf for kind {kind!r} in version {api_version!r}"
    assert isinstance(err.value, ValueError)


def test_every_kind_names_a_message() -> None:
    for api_version, kind in KINDS:
        target = kind_message(api_version, kind)
        assert target is not None and target[1] in PACKAGES[target[0]], (api_version, kind)


def test_served_kinds_read_in_protobuf_all_but_these() -> None:
    """Which served kinds a protobuf body may carry cannot drift from the served kinds unseen."""
    served = {(f"{group}/{version}" if group else version, kind) for group, version, kind in BUILTIN_GVK.values()}
    assert served - set(KINDS) == {
        # not written as objects: DeleteOptions is read in any group version (kind_message), the rest answers
        ("v1", "DeleteOptions"), ("v1", "Status"), ("v1", "WatchEvent"), ("v1", "APIResourceList"),
        # a SelfSubjectReview's body is not read (apiserver/http.py); TokenReviews are read as JSON only
        ("authentication.k8s.io/v1", "SelfSubjectReview"), ("authentication.k8s.io/v1", "TokenReview"),
    }
    # every kind the decoder reads is served (the access reviews too, create-only: kinds/reviews.py; and the
    # body kinds of subresources: Binding, Scale, TokenRequest) but APIService, whose table reads the real
    # kube-apiserver's answers (nodeagent has no aggregation layer), and pods/eviction's Eviction (a body
    # only, in both versions EvictionREST accepts; no schema of its own)
    assert set(KINDS) - served == {("apiregistration.k8s.io/v1", "APIService"), ("policy/v1", "Eviction"),
                                   ("policy/v1beta1", "Eviction")}


@pytest.mark.parametrize("api_version", ["policy/v1", "policy/v1beta1"])
def test_eviction(api_version: str) -> None:
    """policy/v1 generated.proto: 1 metadata, 2 deleteOptions (client-go's typed Evict sends protobuf)."""
    options = f(1, 0) + f(2, f(2, "7")) + f(5, "All")
    obj = decoded(api_version, "Eviction", f(1, f(1, "p") + f(3, "default")) + f(2, options))
    assert obj == {"metadata": {"name": "p", "namespace": "default"},
                   "deleteOptions": {"gracePeriodSeconds": 0, "preconditions": {"resourceVersion": "7"},
                                     "dryRun": ["All"]}}


@pytest.mark.parametrize("api_version", ["resource.k8s.io/v1", "resource.k8s.io/v1beta2", "resource.k8s.io/v1alpha3"])
def test_device_taint_rule(api_version: str) -> None:
    """generated.proto of resource/v1alpha3 (the same numbers in v1beta2 and v1): the selector
    keeps field numbers 2-4 after 1.35 dropped deviceClassName (1) and selectors (5)."""
    spec = f(1, f(2, "gpu.example.com") + f(4, "gpu-0")) + f(2, f(1, "example.com/broken") + f(3, "NoExecute"))
    obj = decoded(api_version, "DeviceTaintRule", f(1, f(1, "drain")) + f(2, spec))
    assert obj == {"metadata": {"name": "drain"}, "spec": {
        "deviceSelector": {"driver": "gpu.example.com", "device": "gpu-0"},
        "taint": {"key": "example.com/broken", "effect": "NoExecute"}}}


def test_list_type_attributes() -> None:
    """DeviceAttribute fields 6-9 (KEP-5491): repeated ints, packed or not, bools, strings, versions."""
    ints = f(6, varint(0) + varint(1))  # packed
    attrs = (entry(2, "numa", ints) + entry(2, "roots", f(8, "pci0") + f(8, "pci1"))
             + entry(2, "flags", f(7, True)) + entry(2, "fw", f(9, "1.0.0")))
    device = f(1, "d0") + attrs
    spec = f(1, "gpu.example.com") + f(2, f(1, "p") + f(3, 1)) + f(3, "n1") + f(6, device)
    obj = decoded("resource.k8s.io/v1", "ResourceSlice", f(1, f(1, "s")) + f(2, spec))
    assert obj["spec"]["devices"][0]["attributes"] == {
        "numa": {"ints": [0, 1]}, "roots": {"strings": ["pci0", "pci1"]}, "flags": {"bools": [True]},
        "fw": {"versions": ["1.0.0"]}}


def test_classic_dra_v1alpha3_claim_and_scheduling_context() -> None:
    """k8s.io/api v0.31's resource/v1alpha3 generated.proto: ResourceClaimSpec.controller = 2,
    ResourceClaimStatus.deallocationRequested = 3, AllocationResult.controller = 4 (numbers no later
    version reuses); the requests are v1beta1's (deviceClassName = 2 on the request itself)."""
    request = f(1, "gpu") + f(2, "accel.example.com")
    spec = f(1, f(1, request)) + f(2, "cxl.example.com")
    status = f(1, f(4, "cxl.example.com")) + f(3, True)
    obj = decoded("resource.k8s.io/v1alpha3", "ResourceClaim", f(1, f(1, "c")) + f(2, spec) + f(3, status))
    assert obj == {"metadata": {"name": "c"},
                   "spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": "accel.example.com"}]},
                            "controller": "cxl.example.com"},
                   "status": {"allocation": {"controller": "cxl.example.com"},
                              "deallocationRequested": True}}
    assert encoding.encode_object({"apiVersion": "resource.k8s.io/v1alpha3", "kind": "ResourceClaim", **obj}) == \
        envelope("resource.k8s.io/v1alpha3", "ResourceClaim", (
            f(1, f(1, "c") + b"".join(f(n, "") for n in (2, 3, 4, 5, 6)) + f(7, 0) + f(8, b""))
            + f(2, f(1, f(1, f(1, "gpu") + f(2, "accel.example.com") + f(4, "") + f(5, 0))) + f(2, "cxl.example.com"))
            + f(3, f(1, f(1, b"") + f(4, "cxl.example.com")) + f(3, True)))) + b"\x1a\x00\x22\x00"
    psc = f(1, f(1, "p")) + f(2, f(1, "node-a") + f(2, "node-a") + f(2, "node-b")) + \
        f(3, f(1, f(1, "gpu") + f(2, "node-b")))
    assert decoded("resource.k8s.io/v1alpha3", "PodSchedulingContext", psc) == {
        "metadata": {"name": "p"}, "spec": {"selectedNode": "node-a", "potentialNodes": ["node-a", "node-b"]},
        "status": {"resourceClaims": [{"name": "gpu", "unsuitableNodes": ["node-b"]}]}}
