"""`check-config` and `run` give the same verdict on every invalid value of the section parsers.

Before, virtualNodes and classicControllers were parsed only when the control plane started, so
`check-config` exited 0 on values `run` then refused. The cases are the parsers' own error tables
(tests/unit/controlplane/test_virtual_nodes.py, test_classic_config.py), read from their
parametrize marks so that a case added there is checked here too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from nodeagent import cli
from tests.unit.controlplane import test_classic_config, test_virtual_nodes


def _cases(test: Any) -> list[Any]:
    (mark,) = [m for m in test.pytestmark if m.name == "parametrize"]
    return list(mark.args[1])


CASES = [
    *[pytest.param({"virtualNodes": [raw]}, message, id=f"virtualNodes-{i}")
      for i, (raw, message) in enumerate(_cases(test_virtual_nodes.test_parse_errors_name_the_field))],
    *[pytest.param({"classicDRA": True, "classicControllers": raw}, message, id=f"classicControllers-{i}")
      for i, (raw, message) in enumerate(_cases(test_classic_config.test_errors_name_the_field))],
    pytest.param({"classicControllers": [{"controllerName": "", "pools": [{"name": "p", "nodes": ["n1"]}]}]},
                 "NodeAgentConfiguration.classicControllers[0].controllerName: Required value", id="issue-20-classic"),
    pytest.param({"virtualNodes": [{"name": "n", "capacity": {"memory": "3x"}}]},
                 'NodeAgentConfiguration.virtualNodes[0].capacity["memory"]: invalid quantity "3x"', id="issue-20-vn"),
    pytest.param({"nodeName": "n1", "virtualNodes": [{"name": "n1"}]},
                 'NodeAgentConfiguration.virtualNodes[0].name: duplicate node name "n1"', id="local-node"),
]


def _verdict(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = cli.main(argv)
    return code, capsys.readouterr().err


@pytest.mark.parametrize(("agent", "message"), CASES)
def test_check_config_and_run_refuse_alike(agent: dict[str, Any], message: str, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump_all([{"kind": "KubeletConfiguration"},
                                        {"kind": "NodeAgentConfiguration", "nodeName": "n1", **agent}]))
    checked = _verdict(["check-config", "--config", str(path)], capsys)
    ran = _verdict(["run", "--config", str(path), "--root-dir", str(tmp_path / "root"),
                    "--state-dir", str(tmp_path / "state")], capsys)
    assert checked == ran
    assert checked[0] == 2 and message in checked[1], checked
    assert not (tmp_path / "state").exists()  # refused before anything started
