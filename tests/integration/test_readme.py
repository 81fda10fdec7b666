"""The README works as written: every shell block that can run on one machine runs, against the
daemon `make run` starts, in README order, as one terminal session would run it.

How: the blocks (```sh and ```bash) are read from README.md. One marked with an HTML comment
`<!-- readme-test: skip: REASON -->` on the line before its fence is reported as skipped with
that reason (systemd units, a kind cluster, placeholders for the reader's own driver); every
other one runs with `bash -eu` (as a terminal, no pipefail: `... | head` is fine), in a copy of
the checkout's layout under a short temporary folder:

- `configs/` is the repository's, and the daemon is `make run`'s command (`nodeagent run --config
  configs/demo.yaml --log-format full`, from the checkout's root, so `.run/` is where the README
  says); `.venv` points at the virtualenv running the tests, whose `bin` comes first on PATH
  (what `. .venv/bin/activate` does);
- what would collide with another daemon on the machine is moved, and only that: the demo's and
  the control plane's API ports (6443), the demo's metrics port (10255: also in the blocks' curl
  commands), the demo's kubelet endpoint port (10250, then 0: a free one) and the multi-node
  block's /tmp/na;
- exported variables carry from block to block (the README's "in a second terminal" session:
  `export KUBECONFIG=...` once); a command the README stops with Ctrl-C (`kubectl get pods -w`)
  gets SIGINT after a few seconds; background processes a block starts are stopped after it.

The kubectl blocks run with the kubectl on PATH, and the Quick start's again with every other
kubectl 1.27-1.33 found on the machine (named kubectl.1.XX in a PATH folder or /usr/local/bin),
`kubectl apply -f configs/examples/` and `--server-side` included.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.integration.daemon_helpers import BIN, free_port, wait_for

# the module's daemon starts once (up to two minutes on a busy machine); the multi-node block
# starts four daemons of its own
pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
SKIP = re.compile(r"<!--\s*readme-test:\s*skip:\s*(.*?)\s*-->", re.S)
# A block that runs only where what it needs is there, skipped with the reason elsewhere:
# `kube-binaries`, the real control plane's multi-role binary (the kube-apiserver tier's, cached).
NEEDS = re.compile(r"<!--\s*readme-test:\s*needs:\s*([a-z-]+)\s*-->")
FENCE = re.compile(r"^```(sh|bash)\s*$")
WATCH_SECONDS = 4  # how long a command the README stops with Ctrl-C runs
BLOCK_TIMEOUT = 400.0


@dataclass(frozen=True)
class Block:
    line: int  # of the opening fence, 1-based
    section: str
    text: str
    skip: str | None
    needs: str | None = None

    @property
    def id(self) -> str:
        return f"L{self.line}-" + re.sub(r"[^a-z0-9]+", "-", self.section.lower()).strip("-")

    @property
    def uses_kubectl(self) -> bool:
        return bool(re.search(r"^\s*kubectl\b", self.text, re.M))


def readme_blocks(text: str) -> list[Block]:
    out: list[Block] = []
    lines = text.splitlines()
    section, i = "", 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#") and not line.startswith("#!"):
            section = line.lstrip("#").strip()
        if FENCE.match(line):
            before = "\n".join(lines[max(0, i - 3):i])
            marks = SKIP.findall(before.split("```")[-1])  # a marker after the previous block only
            needs = NEEDS.findall(before.split("```")[-1])
            end = i + 1
            while end < len(lines) and lines[end].strip() != "```":
                end += 1
            out.append(Block(i + 1, section, "\n".join(lines[i + 1:end]) + "\n", marks[-1] if marks else None,
                             needs[-1] if needs else None))
            i = end
        i += 1
    return out


BLOCKS = readme_blocks(README.read_text())


def other_kubectls() -> list[Path]:
    """kubectl.1.27 ... kubectl.1.33 on the machine (PATH folders and /usr/local/bin)."""
    found: dict[str, Path] = {}
    for folder in [*os.environ.get("PATH", "").split(os.pathsep), "/usr/local/bin"]:
        for path in sorted(Path(folder).glob("kubectl.1.*")) if folder and Path(folder).is_dir() else []:
            m = re.fullmatch(r"kubectl\.1\.(\d+)", path.name)
            if m and 27 <= int(m.group(1)) <= 33 and os.access(path, os.X_OK):
                found.setdefault(path.name, path)
    return [found[k] for k in sorted(found, key=lambda n: int(n.rsplit(".", 1)[1]))]


@dataclass
class Checkout:
    """The checkout's layout the blocks run in, and the `make run` daemon serving it."""

    root: Path
    api_port: int
    metrics_port: int
    env_file: Path
    daemon: subprocess.Popen[bytes] | None = None

    def script(self, block: Block) -> str:
        body = []
        for line in block.text.splitlines():
            if line.lstrip().startswith("curl "):
                line = line.replace("127.0.0.1:10255", f"127.0.0.1:{self.metrics_port}")
            line = line.replace("/tmp/na", f"{self.root}/na")
            if "Ctrl-C" in line and "#" in line:  # stopped by hand in a terminal: SIGINT after a while
                command = line.split("#", 1)[0].rstrip()
                line = f"timeout -s INT {WATCH_SECONDS} {command} || [ $? -eq 124 ]"
            body.append(line)
        return ("set -eu\n" f". {self.env_file}\n" + "\n".join(body) + "\n"
                f"export -p > {self.env_file}.new && mv {self.env_file}.new {self.env_file}\n")

    def run(self, block: Block, path_prefix: str = "") -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "NODEAGENT_ADMIN_SOCKET")}
        env["PATH"] = os.pathsep.join(p for p in (path_prefix, str(BIN), env.get("PATH", "")) if p)
        env["VIRTUAL_ENV"] = str(Path(sys.prefix))
        env["KUBECTL_KUBERC"] = "false"
        # output to a file, not a pipe: daemons a block leaves in the background keep a pipe open
        output = self.root / f"block-{block.line}.out"
        with output.open("w") as out_file:
            proc = subprocess.Popen(["bash", "-c", self.script(block)], cwd=self.root, env=env, text=True,
                                    stdout=out_file, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            proc.wait(timeout=BLOCK_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise AssertionError(f"README block at line {block.line} did not finish in {BLOCK_TIMEOUT} s:\n"
                                 f"{output.read_text(errors='replace')}") from None
        finally:  # what the block left in the background (the multi-node block's daemons)
            with_group_stopped(proc.pid)
        out = output.read_text(errors="replace")
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, "")


def with_group_stopped(pgid: int, leader: subprocess.Popen[bytes] | None = None) -> None:
    """SIGTERM the process group, wait up to 30 s for all of it to end, then SIGKILL what is left.

    `leader`, the group's leader when it is our child and not yet waited for, is reaped while waiting: as a
    zombie it still counts as a member for killpg, so the wait ran its full 30 s after every daemon's stop.
    """
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if leader is not None:
            leader.poll()
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    os.killpg(pgid, signal.SIGKILL)


def make_checkout(root: Path) -> Checkout:
    api_port, metrics_port = free_port(), free_port()
    configs = root / "configs"
    shutil.copytree(REPO / "configs", configs)
    demo = (configs / "demo.yaml").read_text()
    demo = demo.replace("127.0.0.1:6443", f"127.0.0.1:{api_port}").replace(
        "127.0.0.1:10255", f"127.0.0.1:{metrics_port}")
    # the kubelet endpoint: the default 10250 may be another daemon's on this machine
    demo = demo.replace("kind: KubeletConfiguration\n", "kind: KubeletConfiguration\nport: 0\n", 1)
    (configs / "demo.yaml").write_text(demo)
    cp = (configs / "controlplane.yaml").read_text().replace("127.0.0.1:6443", f"127.0.0.1:{free_port()}")
    (configs / "controlplane.yaml").write_text(cp)
    # the real control plane's ports (API, etcd client and peer, scheduler, controller manager, metrics)
    real = (configs / "realcp.yaml").read_text()
    for port in ("16443", "12379", "12380", "11259", "11257", "11255"):
        real = re.sub(rf"\b{port}\b", str(free_port()), real)
    (configs / "realcp.yaml").write_text(real)
    (root / ".venv").symlink_to(Path(sys.prefix))
    env_file = root / "session.env"
    env_file.write_text("")
    return Checkout(root, api_port, metrics_port, env_file)


@pytest.fixture(scope="module")
def checkout() -> Iterator[Checkout]:
    root = Path(tempfile.mkdtemp(prefix="na-rd-", dir="/tmp"))
    co = make_checkout(root)
    log = root / "daemon.log"
    with log.open("wb") as out:  # `make run`: mkdir -p .run; nodeagent run --config configs/demo.yaml --log-format full
        (root / ".run").mkdir()
        co.daemon = subprocess.Popen([str(BIN / "nodeagent"), "run", "--config", "configs/demo.yaml", "--log-format",
                                      "full"], cwd=root, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        kubeconfig = root / ".run" / "kubeconfig"
        wait_for(lambda: co.daemon is not None and co.daemon.poll() is None and kubeconfig.exists()
                 and kubeconfig.stat().st_size > 0, timeout=120, what="the demo daemon's API")
        kubectl = shutil.which("kubectl")
        if kubectl is None:
            pytest.skip("kubectl not installed")

        def demo_running() -> bool:
            out = subprocess.run([kubectl, "--kubeconfig", str(kubeconfig), "get", "pods", "gpu-pod", "dra-pod",
                                  "cxl-pod", "-o", "jsonpath={.items[*].status.phase}"],
                                 capture_output=True, text=True, timeout=30,
                                 env={**os.environ, "KUBECTL_KUBERC": "false"})
            return out.stdout.split() == ["Running"] * 3

        wait_for(demo_running, timeout=120, what="the demo's gpu-pod, dra-pod and cxl-pod Running")
        yield co
    finally:
        if co.daemon is not None:
            with_group_stopped(co.daemon.pid, leader=co.daemon)
            co.daemon.wait()
        text = log.read_text(errors="replace") if log.exists() else ""
        shutil.rmtree(root, ignore_errors=True)
        for bad in ("Traceback", "Unclosed client session", "mode tightened"):
            assert bad not in text, f"the daemon logged {bad!r}:\n{text[-3000:]}"


def test_readme_lists_what_it_skips() -> None:
    """Every block is run or skipped with a reason; the skipped ones, for the record."""
    skipped = [f"line {b.line} ({b.section}): {b.skip}" for b in BLOCKS if b.skip]
    print("README blocks not run:\n  " + "\n  ".join(skipped))
    assert any(b.skip is None for b in BLOCKS)
    assert all(b.skip for b in BLOCKS if "sudo " in b.text), "a block needing root must say why it is skipped"


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_readme_block(checkout: Checkout, block: Block) -> None:
    if block.skip:
        pytest.skip(f"README line {block.line}: {block.skip}")
    prefix = ""
    if block.needs == "kube-binaries":  # the binary on PATH, as the README's `make kube-binaries` block puts it
        prefix = str(real_control_plane_binary(block).parent)
    done = checkout.run(block, path_prefix=prefix)
    assert done.returncode == 0, f"README block at line {block.line} ({block.section}) failed:\n{done.stdout}"


def real_control_plane_binary(block: Block) -> Path:
    """The multi-role binary from the kube-apiserver tier's cache; the block skips (saying why) without it."""
    from tests.integration.kubeapiserver import ENABLE_ENV, fixture_binary, tier_enabled

    if not tier_enabled():
        pytest.skip(f"README line {block.line}: needs the real control plane's binary (`make kube-binaries`, about "
                    f"21 CPU-minutes cold); runs with the opt-in kube-apiserver tier ({ENABLE_ENV}=1)")
    return fixture_binary()


QUICK_START = next(b for b in BLOCKS if b.section.startswith("Quick start") and b.skip is None and b.uses_kubectl)
CLASSIC = next(b for b in BLOCKS if "cxl-pod" in b.text and b.skip is None)


@pytest.mark.parametrize("kubectl", other_kubectls() or [None], ids=lambda p: p.name if p else "none")
def test_readme_kubectl_blocks_with_other_kubectls(checkout: Checkout, kubectl: Path | None) -> None:
    """The Quick start's kubectl block (apply of the examples, client-side and server-side) and the
    classic DRA block again with each other kubectl 1.27-1.33 on the machine."""
    if kubectl is None:
        pytest.skip("no other kubectl (kubectl.1.27 ... kubectl.1.33) on this machine")
    shim = checkout.root / "shims" / kubectl.name
    shim.mkdir(parents=True, exist_ok=True)
    link = shim / "kubectl"
    if not link.exists():
        link.symlink_to(kubectl)
    for block in (QUICK_START, CLASSIC):
        done = checkout.run(block, path_prefix=str(shim))
        assert done.returncode == 0, f"{kubectl.name}: README block at line {block.line} failed:\n{done.stdout}"


def test_virtual_nodes_in_a_node_process_example_parses(tmp_path: Path) -> None:
    """The "Virtual nodes in a node process" example is a NodeAgentConfiguration that loads."""
    text = README.read_text()
    start = text.index("**Virtual nodes in a node process.**")
    body = text[text.index("```yaml\n", start) + len("```yaml\n"):]
    body = body[:body.index("```")]
    doc = yaml.safe_load(body)
    assert (doc["apiVersion"], doc["kind"]) == ("nodeagent.dev/v1alpha1", "NodeAgentConfiguration")
    kubeconfig = tmp_path / "kubeconfig"  # the control plane's, as the example names it
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    config = tmp_path / "node.yaml"
    config.write_text(body.replace("/var/lib/nodeagent/controlplane/kubeconfig", str(kubeconfig)))
    done = subprocess.run([str(BIN / "nodeagent"), "check-config", "--config", str(config)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "rack-a-{index}" in done.stdout and "count: 500" in done.stdout


def test_version_is_the_emulated_release(checkout: Checkout) -> None:
    """kubectl's skew check reads /version: the release the daemon emulates (1.37 for the demo)."""
    import json

    kubectl = shutil.which("kubectl")
    assert kubectl is not None
    kubeconfig = str(checkout.root / ".run" / "kubeconfig")
    done = subprocess.run([kubectl, "--kubeconfig", kubeconfig, "version", "-o", "json"],
                          capture_output=True, text=True, timeout=60, env={**os.environ, "KUBECTL_KUBERC": "false"})
    server = json.loads(done.stdout)["serverVersion"]
    assert (server["major"], server["minor"], server["gitVersion"]) == ("1", "37", "v1.37.2-nodeagent")
