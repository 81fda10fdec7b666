"""Schemas of core/v1 Container and what it holds: env, ports, probes, lifecycle hooks,
resources (with DRA claims), security context, mounts.

Why apart: containers are the part of a pod users write most, so every field is spelled out
with upstream's merge keys (env by name, ports by containerPort, mounts by mountPath).
"""

from __future__ import annotations

from nodeagent.apiserver.schema.builtin.dsl import (
    CORE,
    INT_OR_STRING,
    arr,
    b,
    core,
    i32,
    i64,
    lmap,
    obj,
    qmap,
    qty,
    ref,
    s,
    strs,
)
from nodeagent.apiserver.schema.model import Schema


def _container_fields() -> dict[str, Schema]:
    return {
        "name": s("Name of the container, a DNS label unique in the pod."),
        "image": s("Container image reference."),
        "command": strs("Entrypoint; replaces the image's ENTRYPOINT. $(VAR) references are expanded."),
        "args": strs("Arguments to the entrypoint; replace the image's CMD."),
        "workingDir": s("Working directory; the runtime's default when empty."),
        "ports": lmap(core("ContainerPort"), "Ports the container exposes (informational).",
                      "containerPort", "protocol", merge_key="containerPort"),
        "envFrom": arr(core("EnvFromSource"), "Sources whose keys all become environment variables.", atomic=True),
        "env": lmap(core("EnvVar"), "Environment variables to set.", "name"),
        "resources": core("ResourceRequirements", "Compute resources requested, limited and claimed."),
        "resizePolicy": arr(core("ContainerResizePolicy"), "How each resource may be resized in place.",
                            atomic=True),
        "restartPolicy": s("Always makes an init container a sidecar; only for init containers."),
        "restartPolicyRules": arr(core("ContainerRestartRule"), "Per-exit-code restart actions.", atomic=True),
        "volumeMounts": lmap(core("VolumeMount"), "Pod volumes mounted into the filesystem.", "mountPath"),
        "volumeDevices": lmap(core("VolumeDevice"), "Block volumes exposed as devices.", "devicePath"),
        "livenessProbe": core("Probe", "Restart the container when this check fails."),
        "readinessProbe": core("Probe", "Remove the pod from service endpoints while this check fails."),
        "startupProbe": core("Probe", "Other probes wait until this check succeeds once."),
        "lifecycle": core("Lifecycle", "Hooks run after start and before stop."),
        "terminationMessagePath": s("File whose content becomes the termination message."),
        "terminationMessagePolicy": s("File, or FallbackToLogsOnError to use the log tail.",
                                      enum=["File", "FallbackToLogsOnError"]),
        "imagePullPolicy": s("Always, Never or IfNotPresent.", enum=["Always", "IfNotPresent", "Never"]),
        "securityContext": core("SecurityContext", "Security options of this container."),
        "stdin": b("Allocate a stdin buffer for the container."),
        "stdinOnce": b("Close stdin after the first attach session ends."),
        "tty": b("Allocate a TTY; needs stdin."),
    }


def container_definitions() -> dict[str, Schema]:
    c = CORE
    ephemeral = {**_container_fields(), "targetContainerName": s("Container whose namespaces to share.")}
    return {
        c + "Container": obj("A single application container of a pod.", _container_fields(), ["name"]),
        c + "EphemeralContainer": obj("A temporary container added to a running pod for debugging.", ephemeral,
                                      ["name"]),
        c + "ContainerPort": obj("A network port of a container.", {
            "name": s("IANA_SVC_NAME of the port, unique in the pod."),
            "hostPort": i32("Port on the host to map to; rarely needed."),
            "containerPort": i32("Port number on the pod's IP."),
            "protocol": s("TCP, UDP or SCTP; TCP by default.", enum=["SCTP", "TCP", "UDP"]),
            "hostIP": s("Host IP to bind the host port to."),
        }, ["containerPort"]),
        c + "EnvVar": obj("One environment variable.", {
            "name": s("Variable name."),
            "value": s("Literal value; $(VAR) references to earlier variables are expanded."),
            "valueFrom": core("EnvVarSource", "Where to read the value; not with value."),
        }, ["name"]),
        c + "EnvVarSource": obj("The source of an environment variable's value.", {
            "fieldRef": core("ObjectFieldSelector", "A field of the pod (metadata.name, status.podIP, ...)."),
            "resourceFieldRef": core("ResourceFieldSelector", "A resource limit or request of a container."),
            "configMapKeyRef": core("ConfigMapKeySelector", "A key of a ConfigMap."),
            "secretKeyRef": core("SecretKeySelector", "A key of a Secret."),
            "fileKeyRef": core("FileKeySelector", "A key of an env file in a volume."),
        }),
        c + "ObjectFieldSelector": obj("Selects a field of the pod.", {
            "apiVersion": s("Version the path is written in; v1 by default."),
            "fieldPath": s("Path of the field."),
        }, ["fieldPath"], map_type="atomic"),
        c + "ResourceFieldSelector": obj("Selects a container resource.", {
            "containerName": s("Container name; required for volumes."),
            "resource": s("Resource, e.g. limits.cpu or requests.memory."),
            "divisor": qty("Unit of the exposed value; 1 by default."),
        }, ["resource"], map_type="atomic"),
        c + "ConfigMapKeySelector": obj("Selects a key of a ConfigMap.", {
            "name": s("ConfigMap name."),
            "key": s("The key."),
            "optional": b("Whether the ConfigMap or key may be missing."),
        }, ["key"], map_type="atomic"),
        c + "SecretKeySelector": obj("Selects a key of a Secret.", {
            "name": s("Secret name."),
            "key": s("The key."),
            "optional": b("Whether the Secret or key may be missing."),
        }, ["key"], map_type="atomic"),
        c + "FileKeySelector": obj("Selects a key of an env file.", {
            "volumeName": s("Volume holding the file."),
            "path": s("Path of the file in the volume."),
            "key": s("The key."),
            "optional": b("Whether the file or key may be missing."),
        }, ["volumeName", "path", "key"], map_type="atomic"),
        c + "EnvFromSource": obj("A source of many environment variables.", {
            "prefix": s("Prefix prepended to each key."),
            "configMapRef": core("ConfigMapEnvSource", "A ConfigMap."),
            "secretRef": core("SecretEnvSource", "A Secret."),
        }),
        c + "ConfigMapEnvSource": obj("A ConfigMap whose keys become variables.", {
            "name": s("ConfigMap name."),
            "optional": b("Whether the ConfigMap may be missing."),
        }),
        c + "SecretEnvSource": obj("A Secret whose keys become variables.", {
            "name": s("Secret name."),
            "optional": b("Whether the Secret may be missing."),
        }),
        c + "ResourceRequirements": obj("Compute resources of a container or pod.", {
            "limits": qmap("Maximum amount of each resource allowed."),
            "requests": qmap("Minimum amount of each resource needed; defaults to limits."),
            "claims": lmap(core("ResourceClaim"), "Pod resource claims (spec.resourceClaims) this uses.", "name",
                           strategy=""),
        }),
        c + "ResourceClaim": obj("A reference to one claim of pod.spec.resourceClaims.", {
            "name": s("Name of an entry in pod.spec.resourceClaims."),
            "request": s("Only this request of the claim, when set."),
        }, ["name"]),
        c + "ContainerResizePolicy": obj("How a resource may be resized.", {
            "resourceName": s("cpu or memory."),
            "restartPolicy": s("NotRequired or RestartContainer."),
        }, ["resourceName", "restartPolicy"]),
        c + "ContainerRestartRule": obj("An action to take when a container exits.", {
            "action": s("Restart."),
            "exitCodes": core("ContainerRestartRuleOnExitCodes", "Exit codes the rule matches."),
        }, ["action"]),
        c + "ContainerRestartRuleOnExitCodes": obj("Exit codes a restart rule matches.", {
            "operator": s("In or NotIn."),
            "values": Schema(type="array", items=i32(), list_type="set", description="The exit codes."),
        }, ["operator"]),
        c + "VolumeMount": obj("Mounts a pod volume into a container.", {
            "name": s("Name of the pod volume."),
            "readOnly": b("Mount read-only."),
            "recursiveReadOnly": s("Disabled, IfPossible or Enabled."),
            "mountPath": s("Path in the container; must not contain ':'."),
            "subPath": s("Path inside the volume to mount instead of its root."),
            "mountPropagation": s("None, HostToContainer or Bidirectional."),
            "subPathExpr": s("Like subPath, with $(VAR) expansion."),
        }, ["name", "mountPath"]),
        c + "VolumeDevice": obj("Maps a raw block volume to a device path.", {
            "name": s("Name of a persistentVolumeClaim volume of the pod."),
            "devicePath": s("Device path in the container."),
        }, ["name", "devicePath"]),
        c + "Probe": obj("A health check and how often to run it.", {
            **_handler_fields(),
            "grpc": core("GRPCAction", "Call the gRPC health service."),
            "initialDelaySeconds": i32("Seconds after start before the first probe."),
            "timeoutSeconds": i32("Seconds before a probe times out; 1 by default."),
            "periodSeconds": i32("Seconds between probes; 10 by default."),
            "successThreshold": i32("Consecutive successes to count as healthy."),
            "failureThreshold": i32("Consecutive failures to count as failed; 3 by default."),
            "terminationGracePeriodSeconds": i64("Grace period when a failed probe kills the container."),
        }),
        c + "ExecAction": obj("Runs a command in the container.", {
            "command": strs("Command and arguments, not run in a shell; exit 0 is success."),
        }),
        c + "HTTPGetAction": obj("An HTTP GET request.", {
            "path": s("Path to request."),
            "port": ref(INT_OR_STRING, "Port number or name."),
            "host": s("Host to connect to; the pod IP by default."),
            "scheme": s("HTTP or HTTPS.", enum=["HTTP", "HTTPS"]),
            "httpHeaders": arr(core("HTTPHeader"), "Extra request headers.", atomic=True),
        }, ["port"]),
        c + "HTTPHeader": obj("A request header.", {"name": s("Header name."), "value": s("Header value.")},
                              ["name", "value"]),
        c + "TCPSocketAction": obj("Opens a TCP connection.", {
            "port": ref(INT_OR_STRING, "Port number or name."),
            "host": s("Host to connect to; the pod IP by default."),
        }, ["port"]),
        c + "GRPCAction": obj("A gRPC health check.", {
            "port": i32("Port of the gRPC service."),
            "service": s("Service name passed in the HealthCheckRequest."),
        }, ["port"]),
        c + "SleepAction": obj("Waits a while.", {"seconds": i64("Seconds to sleep.")}, ["seconds"]),
        c + "Lifecycle": obj("Hooks around a container's life.", {
            "postStart": core("LifecycleHandler", "Run right after the container is created."),
            "preStop": core("LifecycleHandler", "Run before the container is terminated."),
            "stopSignal": s("Signal used to stop the container."),
        }),
        c + "LifecycleHandler": obj("One hook action; exactly one field is set.", {
            **_handler_fields(),
            "sleep": core("SleepAction", "Wait before going on."),
        }),
        c + "SecurityContext": obj("Security options of one container; they override the pod's.", {
            "capabilities": core("Capabilities", "Linux capabilities to add or drop."),
            "privileged": b("Run privileged, like root on the host."),
            "seLinuxOptions": core("SELinuxOptions", "SELinux context."),
            "windowsOptions": core("WindowsSecurityContextOptions", "Windows-specific options."),
            "runAsUser": i64("UID to run the entrypoint as."),
            "runAsGroup": i64("GID to run the entrypoint as."),
            "runAsNonRoot": b("Refuse to start when the process would run as UID 0."),
            "readOnlyRootFilesystem": b("Mount the root filesystem read-only."),
            "allowPrivilegeEscalation": b("Whether a process can gain more privileges than its parent."),
            "procMount": s("Default or Unmasked /proc."),
            "seccompProfile": core("SeccompProfile", "Seccomp profile."),
            "appArmorProfile": core("AppArmorProfile", "AppArmor profile."),
        }),
        c + "Capabilities": obj("Linux capabilities.", {
            "add": strs("Capabilities to add."),
            "drop": strs("Capabilities to drop."),
        }),
        c + "SELinuxOptions": obj("An SELinux label.", {
            "user": s("SELinux user."), "role": s("SELinux role."), "type": s("SELinux type."),
            "level": s("SELinux level."),
        }),
        c + "WindowsSecurityContextOptions": obj("Windows-specific security options.", {
            "gmsaCredentialSpecName": s("Name of the GMSA credential spec."),
            "gmsaCredentialSpec": s("Content of the GMSA credential spec."),
            "runAsUserName": s("User name to run as."),
            "hostProcess": b("Run as a host process container."),
        }),
        c + "SeccompProfile": obj("A seccomp profile.", {
            "type": s("RuntimeDefault, Unconfined or Localhost.", enum=["Localhost", "RuntimeDefault", "Unconfined"]),
            "localhostProfile": s("Profile file on the node, for Localhost."),
        }, ["type"]),
        c + "AppArmorProfile": obj("An AppArmor profile.", {
            "type": s("RuntimeDefault, Unconfined or Localhost.", enum=["Localhost", "RuntimeDefault", "Unconfined"]),
            "localhostProfile": s("Profile loaded on the node, for Localhost."),
        }, ["type"]),
    }


def _handler_fields() -> dict[str, Schema]:
    return {
        "exec": core("ExecAction", "Run a command."),
        "httpGet": core("HTTPGetAction", "Send an HTTP GET."),
        "tcpSocket": core("TCPSocketAction", "Open a TCP connection."),
    }
