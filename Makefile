# LLM Lab: one command to set up and serve, one to set up and test.
#   make serve   -> .venv from the pinned files, then the site on http://127.0.0.1:8000
#   make test    -> .venv from the pinned files, Chromium for the browser tests, pytest
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

# Tiny models run several times faster single-threaded on small shared CPUs.
export OMP_NUM_THREADS ?= 1
export MKL_NUM_THREADS ?= 1
export NO_MKDOCS_2_WARNING ?= 1

.PHONY: setup serve build build-zh test test-fast browser-deps bench lock clean

$(STAMP): pyproject.toml requirements/lock.txt requirements/torch.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	@# Keep a torch the reader installed for their platform (CUDA, ROCm, MPS...).
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/pip install -q -r requirements/torch.txt
	$(BIN)/pip install -q -r requirements/lock.txt
	$(BIN)/pip install -q --no-deps -e .
	touch $@

setup: $(STAMP)

# The experiments and notebooks first (python -m llmlab.precompute; the build would
# run it too when they are stale), then the site.
serve: setup
	$(BIN)/python -m llmlab.precompute
	$(BIN)/mkdocs serve -a 127.0.0.1:8000

build: setup
	$(BIN)/python -m llmlab.precompute
	$(BIN)/mkdocs build --strict

# While writing: build the Chinese pages only (see README).
build-zh: setup
	$(BIN)/python -m llmlab.precompute
	LLMLAB_BUILD_EN=false $(BIN)/mkdocs build

browser-deps:
	bash scripts/ensure-chromium.sh

test: setup browser-deps
	$(BIN)/pytest

# Everything but the slow site build and the browser, on every core (pytest-xdist).
# Not for `make test`: the site build asserts timings, which other tests would disturb.
test-fast: setup
	$(BIN)/pytest -m "not site and not browser" -n auto

bench: setup
	$(BIN)/python benchmarks/build.py

# The lock is what a fresh environment resolves from pyproject.toml (torch excluded).
lock:
	rm -rf .venv-lock && $(PYTHON) -m venv .venv-lock
	.venv-lock/bin/pip install -q -r requirements/torch.txt
	.venv-lock/bin/pip install -q ".[docs,test,plot]"
	{ head -2 requirements/lock.txt; .venv-lock/bin/pip freeze --exclude-editable \
	  | grep -v -i '^torch==\|^llmlab'; } > requirements/lock.new
	mv requirements/lock.new requirements/lock.txt && rm -rf .venv-lock

clean:
	rm -rf site .cache test-artifacts
