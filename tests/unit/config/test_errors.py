"""Configuration errors: an empty file is refused, and every error of a file is reported at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodeagent import cli
from nodeagent.config import load
from nodeagent.config.fields import ConfigErrors
from nodeagent.errors import ConfigError


@pytest.mark.parametrize("text", ["", "\n", "# nothing yet\n", "---\n---\n"])
def test_an_empty_file_is_refused_with_a_message(tmp_path: Path, text: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=r"the configuration file is empty: want a KubeletConfiguration and/or a "
                                          r"NodeAgentConfiguration document"):
        load(path)


BAD = """\
kind: KubeletConfiguration
maxPods: many
failCgroupV1: "no"
evictionHard: {memory.available: 10XB}
featureGates: {NoSuchGate: true}
---
kind: NodeAgentConfiguration
nodeName: Bad_Name
socketMode: "0777"
colour: blue
controlPlane: {percentageOfNodesToScore: 200}
virtualNodes: [{name: vn, capacity: {memory: 3x}}]
classicControllers: [{controllerName: ""}]
"""


def test_every_error_is_reported_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(BAD)
    with pytest.raises(ConfigErrors) as err:
        load(path)
    assert err.value.messages == [  # the kubelet's fields in upstream's declaration order, then the agent's
        "KubeletConfiguration.maxPods: expected integer, got string",
        'KubeletConfiguration.evictionHard["memory.available"]: invalid quantity "10XB"',
        "KubeletConfiguration.failCgroupV1: expected boolean, got string",
        "NodeAgentConfiguration.colour: unknown field",
        'NodeAgentConfiguration.nodeName: invalid value "Bad_Name": a lowercase RFC 1123 subdomain must consist of '
        "lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric",
        "NodeAgentConfiguration.socketMode: mode 0777 lets every user on the host connect to the sockets (the admin "
        "socket creates and deletes any object); use 0660 or tighter and a group",
        "NodeAgentConfiguration.controlPlane.percentageOfNodesToScore: Invalid value: 200: not in valid range [0-100]",
        'NodeAgentConfiguration.virtualNodes[0].capacity["memory"]: invalid quantity "3x"',
        "NodeAgentConfiguration.classicControllers[0].controllerName: Required value",
        "KubeletConfiguration.featureGates.NoSuchGate: unrecognized feature gate: NoSuchGate",
    ]
    assert cli.main(["check-config", "--config", str(path)]) == 2
    printed = capsys.readouterr().err
    assert printed.startswith("nodeagent: 10 configuration errors:\n  KubeletConfiguration.maxPods: ")
    assert all(m in printed for m in err.value.messages)


def test_each_agent_field_is_declared_once_for_parse_and_render() -> None:
    from nodeagent.config import agent

    cfg = agent.parse_agent({"nodeName": "n1"})
    assert list(agent.render_agent(cfg)) == [f.key for f in agent._FIELDS]
    assert {"apiVersion", "kind", *agent.render_agent(cfg)} == agent._AGENT_KEYS
    again = agent.parse_agent({"kind": "NodeAgentConfiguration", **agent.render_agent(cfg)})
    assert agent.render_agent(again) == agent.render_agent(cfg)
