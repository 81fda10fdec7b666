# Two commands on a fresh machine: `make run` (the demo daemon) and `make test` (the suite).
# Both create the virtualenv at .venv first.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PROTOS := $(shell find protos -name '*.proto')

.PHONY: run test venv lint bench clean

$(STAMP): pyproject.toml hatch_build.py $(PROTOS)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

run: $(STAMP)
	mkdir -p .run
	$(VENV)/bin/nodeagent run --config configs/demo.yaml --log-format full

test: $(STAMP)
	bash scripts/install-test-tools.sh
	$(PY) -m pytest -q

lint: $(STAMP)
	$(VENV)/bin/ruff check nodeagent plugins tests bench
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

bench: $(STAMP)
	$(PY) bench/podresources.py

clean:
	rm -rf .run build dist *.egg-info
