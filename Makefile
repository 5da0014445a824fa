# Novaberg: `make run` and `make test` do all set-up on a fresh machine.
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
PYTHON ?= $(shell command -v python3.11 || command -v python3.12 || command -v python3)
VENV := .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test test-llm bench lint format stop install

install: $(STAMP)

$(STAMP): requirements.txt
	@test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	@# This machine's pip config names local index folders that may be missing; pip warns once
	@# per package about them. The filter drops only that line; pip's exit status still counts.
	$(VPY) -m pip install --quiet --disable-pip-version-check -r requirements.txt 2>&1 \
	  | { grep -v 'is ignored: it is neither a file nor a directory' || true; }
	@touch $(STAMP)

run: $(STAMP)
	$(VPY) -m novaberg.launcher run

test: $(STAMP)
	$(VPY) -m novaberg.launcher test

# The tests marked llm, against a real OpenAI-compatible server (DESIGN.md "Commands").
test-llm: $(STAMP)
	@test -n "$$NOVABERG_LLM_BASE_URL" || { echo "novaberg: FEHLER: make test-llm braucht" \
	  "NOVABERG_LLM_BASE_URL, z. B. http://127.0.0.1:11434/v1" >&2; exit 2; }
	$(VPY) -m novaberg.launcher test -m llm

bench: $(STAMP)
	$(VPY) -m novaberg.launcher bench

lint: $(STAMP)
	$(VPY) -m novaberg.launcher lint

format: $(STAMP)
	$(VPY) -m ruff check --fix . && $(VPY) -m ruff format .

stop: $(STAMP)
	$(VPY) -m novaberg.launcher stop
