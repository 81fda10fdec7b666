"""Protobuf bodies of the storage, policy, scheduling and discovery kinds decode to what encoding/json
writes for the same Go object: what client-go's typed clients (the real kube-scheduler's and
kube-controller-manager's) send for them.

The bodies were captured from k8s.io/api v0.37.2: `obj.Marshal()` wrapped in runtime.Unknown with the
object's apiVersion and kind behind the `k8s\\x00` magic (what apimachinery's protobuf serializer
writes), next to `json.Marshal(obj)` of the same object; each object sets most fields of its kind.
"""

from __future__ import annotations

import orjson
import pytest

from nodeagent.apiserver.protobuf import decoder
from tests.unit.apiserver.test_protobuf import no_nulls

GOLDEN = [
    pytest.param(
        "6b3873000a1c0a1173746f726167652e6b38732e696f2f763112074353494e6f646512290a110a016e12001a0022002a0032"
        "003800420012120a100a01641201691a047a6f6e65220208041a001a002200",
        '{"metadata":{"name":"n"},"spec":{"drivers":[{"name":"d","nodeID":"i","topologyKeys":["zone"],"alloca'
        'table":{"count":4}}]},"status":{}}',
        id='CSINode'),
    pytest.param(
        "6b3873000a1e0a1173746f726167652e6b38732e696f2f7631120943534944726976657212350a110a016412001a0022002a"
        "003200380042001220080010011a0a50657273697374656e742a0446696c6532060a016110901c40001a002200",
        '{"metadata":{"name":"d"},"spec":{"attachRequired":false,"podInfoOnMount":true,"volumeLifecycleModes"'
        ':["Persistent"],"fsGroupPolicy":"File","tokenRequests":[{"audience":"a","expirationSeconds":3600}],"'
        'seLinuxMount":false}}',
        id='CSIDriver'),
    pytest.param(
        "6b3873000a210a1173746f726167652e6b38732e696f2f7631120c53746f72616765436c617373123b0a120a02736312001a"
        "0022002a003200380042001201701a060a016b1201762a02726f30013a1457616974466f724669727374436f6e73756d6572"
        "1a002200",
        '{"metadata":{"name":"sc"},"provisioner":"p","parameters":{"k":"v"},"mountOptions":["ro"],"allowVolum'
        'eExpansion":true,"volumeBindingMode":"WaitForFirstConsumer"}',
        id='StorageClass'),
    pytest.param(
        "6b3873000a270a1173746f726167652e6b38732e696f2f7631121243534953746f726167654361706163697479122e0a130a"
        "016312001a026e7322002a00320038004200120b0a090a047a6f6e651201611a02736322060a04313047691a002200",
        '{"metadata":{"name":"c","namespace":"ns"},"nodeTopology":{"matchLabels":{"zone":"a"}},"storageClassN'
        'ame":"sc","capacity":"10Gi"}',
        id='CSIStorageCapacity'),
    pytest.param(
        "6b3873000a250a1173746f726167652e6b38732e696f2f76311210566f6c756d654174746163686d656e74122d0a120a0276"
        "6112001a0022002a00320038004200120b0a016412030a01781a016e1a0a080112060a01611201621a002200",
        '{"metadata":{"name":"va"},"spec":{"attacher":"d","source":{"persistentVolumeName":"x"},"nodeName":"n'
        '"},"status":{"attached":true,"attachmentMetadata":{"a":"b"}}}',
        id='VolumeAttachment'),
    pytest.param(
        "6b3873000a200a09706f6c6963792f76311213506f6444697372757074696f6e427564676574123a0a130a016212001a026e"
        "7322002a0032003800420012170a09080110001a03353025120a0a080a036170701201771a0a080218012003280230031a00"
        "2200",
        '{"metadata":{"name":"b","namespace":"ns"},"spec":{"minAvailable":"50%","selector":{"matchLabels":{"a'
        'pp":"w"}}},"status":{"observedGeneration":2,"disruptionsAllowed":1,"currentHealthy":3,"desiredHealth'
        'y":2,"expectedPods":3}}',
        id='PodDisruptionBudget'),
    pytest.param(
        "6b3873000a250a147363686564756c696e672e6b38732e696f2f7631120d5072696f72697479436c61737312220a120a0270"
        "6312001a0022002a00320038004200100a18002201642a054e657665721a002200",
        '{"metadata":{"name":"pc"},"value":10,"description":"d","preemptionPolicy":"Never"}',
        id='PriorityClass'),
    pytest.param(
        "6b3873000a240a13646973636f766572792e6b38732e696f2f7631120d456e64706f696e74536c696365123d0a130a017312"
        "001a026e7322002a0032003800420012110a0831302e302e302e31120208013201781a0d0a04687474701203544350185022"
        "04495076341a002200",
        '{"metadata":{"name":"s","namespace":"ns"},"addressType":"IPv4","endpoints":[{"addresses":["10.0.0.1"'
        '],"conditions":{"ready":true},"nodeName":"x"}],"ports":[{"name":"http","protocol":"TCP","port":80}]}',
        id='EndpointSlice'),
]


@pytest.mark.parametrize(("body_hex", "go_json"), GOLDEN)
def test_go_bodies_decode_to_what_encoding_json_writes(body_hex: str, go_json: str) -> None:
    obj, api_version, kind = decoder.decode(bytes.fromhex(body_hex))
    want = no_nulls(orjson.loads(go_json))
    assert obj == {"apiVersion": api_version, "kind": kind, **want}
