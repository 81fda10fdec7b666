"""Build a Go module of the test suite (tests/fixtures/<name>) into a binary, or skip the test.

Some integration tests drive the daemon with a real Go client (client-go), because what Go
clients send — protobuf preferences, WatchList streams, field selectors — is what the API
server must get right. Those tests need `go` and the Go module proxy; without either the test
is skipped with the reason, never failed. Dependencies come from the proxy named by the
environment (GOPROXY, the default otherwise) with -mod=mod, so go.sum is the only pin. The
binary goes into a directory the caller owns (a pytest temp dir), never into the source tree.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

# Words in `go` output that mean the network (the module proxy) was not reachable, as opposed
# to a compile error in the module.
_NETWORK_ERRORS = (
    "dial tcp",
    "no such host",
    "connection refused",
    "connection reset",
    "i/o timeout",
    "TLS handshake timeout",
    "network is unreachable",
    "temporary failure in name resolution",
    "Client.Timeout exceeded",
    "proxyconnect",
    "502 Bad Gateway",
    "503 Service Unavailable",
    "504 Gateway Timeout",
)


def go_binary() -> str | None:
    """The `go` command: on PATH, or where the official tarball installs it."""
    found = shutil.which("go")
    if found:
        return found
    default = Path("/usr/local/go/bin/go")
    return str(default) if default.exists() else None


def go_env() -> dict[str, str]:
    """The environment for `go`: the caller's, plus -mod=mod and no toolchain download."""
    env = dict(os.environ)
    flags = env.get("GOFLAGS", "").split()
    for flag in ("-mod=mod", "-buildvcs=false"):
        if flag not in flags:
            flags.append(flag)
    env["GOFLAGS"] = " ".join(flags)
    # an older local go must not fetch a newer toolchain behind the test's back
    env.setdefault("GOTOOLCHAIN", "local")
    return env


# Set by .ci/run: the wall-clock time (epoch seconds) after which no Go build may still be running, so that
# a cold machine's builds (the Kubernetes fixture alone takes 20+ CPU-minutes) cannot push the whole CI run
# past its limit. A build that would end later is stopped and its tests skip, saying so.
DEADLINE_ENV = "NODEAGENT_CI_BUILD_DEADLINE"


def _budget(timeout: float) -> tuple[float, bool]:
    """The timeout to give `go`: the caller's, or less when .ci/run's build deadline comes first."""
    given = os.environ.get(DEADLINE_ENV, "").strip()
    if not given:
        return timeout, False
    left = float(given) - time.time()
    return (max(left, 0.0), True) if left < timeout else (timeout, False)


def _run(go: str, args: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    budget, by_deadline = _budget(timeout)
    if by_deadline and budget <= 0:
        pytest.skip(f"`go {' '.join(args)}` in {cwd.name} not started: the CI run's time for Go builds "
                    f"({DEADLINE_ENV}) is spent (a cold build of this fixture did not fit this run)")
    try:
        return subprocess.run([go, *args], cwd=cwd, env=go_env(), capture_output=True, text=True, timeout=budget)
    except subprocess.TimeoutExpired as err:
        if by_deadline:
            pytest.skip(f"`go {' '.join(args)}` in {cwd.name} stopped after {budget:.0f}s at the CI run's deadline "
                        f"for Go builds ({DEADLINE_ENV}): a cold build did not fit this run")
        pytest.skip(f"`go {' '.join(args)}` took longer than {timeout:.0f}s (slow or unreachable Go module proxy "
                    f"{go_env().get('GOPROXY', 'default')}): {err}")


def _skip_if_network(what: str, out: subprocess.CompletedProcess[str]) -> None:
    text = out.stderr + out.stdout
    lowered = text.lower()
    if any(word.lower() in lowered for word in _NETWORK_ERRORS):
        proxy = go_env().get("GOPROXY") or "the default proxy"
        last = text.strip().splitlines()[-1] if text.strip() else ""
        pytest.skip(f"the Go module proxy ({proxy}) cannot be reached, so {what} is impossible: {last}")
    if "requires go >=" in text or "toolchain not available" in text:
        pytest.skip(f"the installed go is too old for {what}: {text.strip().splitlines()[-1]}")


def build(module_dir: Path, out_dir: Path, name: str | None = None, timeout: float = 540,
          ldflags: Sequence[str] = (), packages: Sequence[str] = ()) -> Path:
    """Download the module's dependencies and build it to out_dir/name; skip when go or the proxy is missing.

    With packages (for example `tool`, every command the go.mod's tool directives name), those main
    packages are built into out_dir, each under its own name, and out_dir/name is one of them: this is
    how a published program is built unchanged from its module at the version go.mod pins.
    A compile error fails the test (with go's output): that is a bug in the module, not the machine.
    """
    go = go_binary()
    if go is None:
        pytest.skip("`go` is not installed (needed to build the client-go test program)")
    out_dir.mkdir(parents=True, exist_ok=True)
    binary = out_dir / (name or module_dir.name)
    download = _run(go, ["mod", "download"], module_dir, timeout)
    if download.returncode != 0:
        _skip_if_network(f"downloading the modules of {module_dir.name}", download)
        raise AssertionError(f"go mod download in {module_dir} failed:\n{download.stderr}{download.stdout}")
    flags = ["-ldflags", " ".join(ldflags)] if ldflags else []
    target = [f"{out_dir}/", *packages] if packages else [str(binary), "."]
    built = _run(go, ["build", *flags, "-o", *target], module_dir, timeout)
    if built.returncode != 0:
        _skip_if_network(f"building {module_dir.name}", built)
        raise AssertionError(f"go build in {module_dir} failed:\n{built.stderr}{built.stdout}")
    if not binary.is_file():
        raise AssertionError(f"go build in {module_dir} made no {binary.name} (built {sorted(os.listdir(out_dir))})")
    return binary


def cache_root() -> Path:
    """Where build_cached keeps binaries between runs (outside the repo).

    $NODEAGENT_GO_FIXTURE_CACHE, else ~/.cache/nodeagent/go-fixtures.
    """
    given = os.environ.get("NODEAGENT_GO_FIXTURE_CACHE")
    return Path(given) if given else Path.home() / ".cache" / "nodeagent" / "go-fixtures"


def _source_key(go: str, module_dir: Path, ldflags: Sequence[str], packages: Sequence[str] = ()) -> str:
    """A digest of the module's sources (go.mod, go.sum, *.go), the Go version, the link flags and packages."""
    digest = hashlib.sha256()
    version = subprocess.run([go, "env", "GOVERSION"], env=go_env(), capture_output=True, text=True, timeout=60)
    digest.update(version.stdout.strip().encode())
    digest.update("\0".join(ldflags).encode())
    if packages:
        digest.update(("\0packages\0" + "\0".join(packages)).encode())
    for path in sorted(p for p in module_dir.iterdir() if p.name in ("go.mod", "go.sum") or p.suffix == ".go"):
        digest.update(f"\0{path.name}\0".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def build_cached(module_dir: Path, name: str, timeout: float = 540, cache: Path | None = None,
                 ldflags: Sequence[str] = (), packages: Sequence[str] = ()) -> Path:
    """build(), kept outside the repo under cache_root() for as long as the module's sources and Go stay the same.

    For modules whose build takes minutes (the kube-apiserver tier): later sessions reuse the binary
    without even asking the proxy. A build goes into a private directory renamed into place, so two
    sessions building at once never see half a binary.
    """
    go = go_binary()
    if go is None:
        pytest.skip(f"`go` is not installed (needed to build {module_dir.name})")
    final = (cache or cache_root()) / f"{name}-{_source_key(go, module_dir, ldflags, packages)}"
    if (final / name).is_file():
        return final / name
    with _building(final, timeout):
        if (final / name).is_file():  # built by whoever held the lock before us
            return final / name
        staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=final.parent))
        try:
            build(module_dir, staging, name, timeout, ldflags, packages)
            try:
                staging.rename(final)
            except OSError:  # another session put the same build there first (one without this lock)
                if not (final / name).is_file():
                    raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return final / name


LOCK_POLL = 0.5  # seconds between two tries of a build lock another process holds


@contextmanager
def _building(final: Path, timeout: float) -> Iterator[None]:
    """Hold the build lock of one cache entry (an flock on CACHE/locks/<entry>.lock) while it is built.

    The suite runs on pytest-xdist workers, each a process with its own session fixtures, so two workers
    (or two sessions on one machine) that need the same Go fixture at once would each build it: minutes of
    both cores for the Kubernetes fixture. The lock makes one build it while the others wait and then find
    it in place. A waiter gives up as a builder would: at twice the timeout (`go mod download` and `go
    build` each have it), or at .ci/run's build deadline, skipping with the reason. The kernel drops an
    flock when its holder dies, so a killed build never leaves the entry locked.
    """
    locks = final.parent / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    with (locks / f"{final.name}.lock").open("a") as held:
        budget, by_deadline = _budget(2 * timeout)
        give_up = time.monotonic() + budget
        while True:
            try:
                fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= give_up:
                    why = (f"the CI run's deadline for Go builds ({DEADLINE_ENV})" if by_deadline
                           else f"{budget:.0f}s, twice the build's timeout")
                    pytest.skip(f"{final.name} is being built by another process (build lock {held.name}) and "
                                f"was not done by {why}")
                time.sleep(LOCK_POLL)
        try:
            yield
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)
