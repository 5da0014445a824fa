# Novaberg: `make run` and `make test` do all set-up on a fresh machine.
PYTHON ?= $(shell command -v python3.11 || command -v python3.12 || command -v python3)
VENV := .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test bench lint format stop install

install: $(STAMP)

$(STAMP): requirements.txt
	@test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	@touch $(STAMP)

run: $(STAMP)
	$(VPY) -m novaberg.launcher run

test: $(STAMP)
	$(VPY) -m novaberg.launcher test

bench: $(STAMP)
	$(VPY) -m bench.run

lint: $(STAMP)
	$(VPY) -m ruff check . && $(VPY) -m ruff format --check .

format: $(STAMP)
	$(VPY) -m ruff check --fix . && $(VPY) -m ruff format .

stop: $(STAMP)
	$(VPY) -m novaberg.launcher stop
