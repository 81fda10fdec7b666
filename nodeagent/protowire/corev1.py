"""core/v1 PersistentVolume, PersistentVolumeClaim, ReplicationController and Endpoints with what
only they reference (k8s.io/api core/v1 generated.proto): the persistent-volume sources, node
affinity, secret references, claim status.

Why apart from core.py and volume.py: these came with issue 23 (kube-controller-manager's
persistent-volume binder writes volumes and claims through client-go, in protobuf); the sources
pods share (nfs, hostPath, fc...) stay in volume.py. Field order and presence as k8s.io/api's
types.go. Notation: nodeagent.protowire.notation.
"""

from __future__ import annotations

from nodeagent.protowire.notation import package

COREV1 = package({
    "PersistentVolume": """
        1 metadata meta.ObjectMeta; 2 spec PersistentVolumeSpec; 3 status PersistentVolumeStatus""",
    "PersistentVolumeSpec": """
        1 capacity {}Quantity; 2 PersistentVolumeSource ^PersistentVolumeSource; 3 accessModes []string
        4 claimRef ObjectReference*; 5 persistentVolumeReclaimPolicy string; 6 storageClassName string
        7 mountOptions []string; 8 volumeMode string?; 9 nodeAffinity VolumeNodeAffinity*
        10 volumeAttributesClassName string?""",
    "PersistentVolumeSource": """
        1 gcePersistentDisk GCEPersistentDiskVolumeSource*
        2 awsElasticBlockStore AWSElasticBlockStoreVolumeSource*
        3 hostPath HostPathVolumeSource*; 4 glusterfs GlusterfsPersistentVolumeSource*; 5 nfs NFSVolumeSource*
        6 rbd RBDPersistentVolumeSource*; 7 iscsi ISCSIPersistentVolumeSource*
        8 cinder CinderPersistentVolumeSource*
        9 cephfs CephFSPersistentVolumeSource*; 10 fc FCVolumeSource*; 11 flocker FlockerVolumeSource*
        12 flexVolume FlexPersistentVolumeSource*; 13 azureFile AzureFilePersistentVolumeSource*
        14 vsphereVolume VsphereVirtualDiskVolumeSource*; 15 quobyte QuobyteVolumeSource*
        16 azureDisk AzureDiskVolumeSource*; 17 photonPersistentDisk PhotonPersistentDiskVolumeSource*
        18 portworxVolume PortworxVolumeSource*; 19 scaleIO ScaleIOPersistentVolumeSource*
        20 local LocalVolumeSource*; 21 storageos StorageOSPersistentVolumeSource*
        22 csi CSIPersistentVolumeSource*""",
    "PersistentVolumeStatus": "1 phase string; 2 message string; 3 reason string; 4 lastPhaseTransitionTime Time*",
    "VolumeNodeAffinity": "1 required NodeSelector*",
    "CSIPersistentVolumeSource": """
        1 driver string!; 2 volumeHandle string!; 3 readOnly bool; 4 fsType string; 5 volumeAttributes {}string
        6 controllerPublishSecretRef SecretReference*; 7 nodeStageSecretRef SecretReference*
        8 nodePublishSecretRef SecretReference*; 9 controllerExpandSecretRef SecretReference*
        10 nodeExpandSecretRef SecretReference*""",
    "LocalVolumeSource": "1 path string!; 2 fsType string?",
    "SecretReference": "1 name string; 2 namespace string",
    "GlusterfsPersistentVolumeSource": """
        1 endpoints string!; 2 path string!; 3 readOnly bool; 4 endpointsNamespace string?""",
    "RBDPersistentVolumeSource": """
        1 monitors []string; 2 image string!; 3 fsType string; 4 pool string; 5 user string; 6 keyring string
        7 secretRef SecretReference*; 8 readOnly bool""",
    "ISCSIPersistentVolumeSource": """
        1 targetPortal string!; 2 iqn string!; 3 lun int32!; 4 iscsiInterface string; 5 fsType string
        6 readOnly bool; 7 portals []string; 8 chapAuthDiscovery bool; 11 chapAuthSession bool
        10 secretRef SecretReference*; 12 initiatorName string?""",
    "CinderPersistentVolumeSource": """
        1 volumeID string!; 2 fsType string; 3 readOnly bool; 4 secretRef SecretReference*""",
    "CephFSPersistentVolumeSource": """
        1 monitors []string; 2 path string; 3 user string; 4 secretFile string; 5 secretRef SecretReference*
        6 readOnly bool""",
    "FlexPersistentVolumeSource": """
        1 driver string!; 2 fsType string; 3 secretRef SecretReference*; 4 readOnly bool; 5 options {}string""",
    "AzureFilePersistentVolumeSource": """
        1 secretName string!; 2 shareName string!; 3 readOnly bool; 4 secretNamespace string?""",
    "ScaleIOPersistentVolumeSource": """
        1 gateway string!; 2 system string!; 3 secretRef SecretReference*; 4 sslEnabled bool
        5 protectionDomain string; 6 storagePool string; 7 storageMode string; 8 volumeName string; 9 fsType string
        10 readOnly bool""",
    "StorageOSPersistentVolumeSource": """
        1 volumeName string; 2 volumeNamespace string; 3 fsType string; 4 readOnly bool
        5 secretRef ObjectReference*""",
    "PersistentVolumeClaim": """
        1 metadata meta.ObjectMeta; 2 spec PersistentVolumeClaimSpec; 3 status PersistentVolumeClaimStatus""",
    "PersistentVolumeClaimStatus": """
        1 phase string; 2 accessModes []string; 3 capacity {}Quantity; 4 conditions []PersistentVolumeClaimCondition
        5 allocatedResources {}Quantity; 7 allocatedResourceStatuses {}string
        8 currentVolumeAttributesClassName string?; 9 modifyVolumeStatus ModifyVolumeStatus*""",
    "PersistentVolumeClaimCondition": """
        1 type string!; 2 status string!; 3 lastProbeTime Time; 4 lastTransitionTime Time; 5 reason string
        6 message string""",
    "ModifyVolumeStatus": "1 targetVolumeAttributesClassName string; 2 status string!",
    "ReplicationController": """
        1 metadata meta.ObjectMeta; 2 spec ReplicationControllerSpec; 3 status ReplicationControllerStatus""",
    "ReplicationControllerSpec": """
        1 replicas int32?; 4 minReadySeconds int32; 2 selector {}string; 3 template PodTemplateSpec*""",
    "ReplicationControllerStatus": """
        1 replicas int32!; 2 fullyLabeledReplicas int32; 4 readyReplicas int32; 5 availableReplicas int32
        3 observedGeneration int64; 6 conditions []ReplicationControllerCondition""",
    "ReplicationControllerCondition": """
        1 type string!; 2 status string!; 3 lastTransitionTime Time; 4 reason string; 5 message string""",
    "Endpoints": "1 metadata meta.ObjectMeta; 2 subsets []EndpointSubset",
    "EndpointSubset": "1 addresses []EndpointAddress; 2 notReadyAddresses []EndpointAddress; 3 ports []EndpointPort",
    "EndpointAddress": "1 ip string!; 3 hostname string; 4 nodeName string?; 2 targetRef ObjectReference*",
    "EndpointPort": "1 name string; 2 port int32!; 3 protocol string; 4 appProtocol string?",
})
"""core/v1 messages joined into the core package (packages.py)."""
