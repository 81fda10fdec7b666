"""The `nodeagent` command's surface: objects go through kubectl, the node-only commands stay."""

from __future__ import annotations

import pytest

from nodeagent.cli import _parser, main


@pytest.mark.parametrize("argv", [
    ["get", "pods"],
    ["apply", "-f", "-"],
    ["delete", "pod", "x"],
    ["events"],
])
def test_object_commands_are_kubectls(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == 2
    assert f"invalid choice: '{argv[0]}'" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "expected"), [
    (["describe", "pod", "web", "-n", "team"], {"command": "describe", "kind": "pod", "name": "web",
                                                 "namespace": "team", "admin_socket": None}),
    (["describe", "--admin-socket", "/x.sock", "node", "n1"], {"kind": "node", "name": "n1", "namespace": "",
                                                               "admin_socket": "/x.sock"}),
    (["device", "set-health", "gpu.example.com/pool-a/gpu-1", "Unhealthy"],
     {"command": "device", "device_command": "set-health", "resource": "gpu.example.com/pool-a/gpu-1",
      "device": "", "health": "Unhealthy"}),
    (["device", "--admin-socket", "/x.sock", "set-health", "example.com/gpu", "gpu-0", "Healthy"],
     {"resource": "example.com/gpu", "device": "gpu-0", "health": "Healthy", "admin_socket": "/x.sock"}),
])
def test_node_only_commands_parse(argv: list[str], expected: dict[str, object]) -> None:
    got = vars(_parser().parse_args(argv))
    assert {k: got[k] for k in expected} == expected


def test_help_points_at_kubectl(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = " ".join(capsys.readouterr().out.split())  # argparse wraps the epilog
    assert "kubectl --kubeconfig STATE_DIR/kubeconfig" in out
    assert "{run,check-config,kubeconfig,describe,device,fault,calls,simulate,conformance}" in out
