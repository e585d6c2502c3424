# LLM Lab: one command to set up and serve, one to set up and test.
#   make serve   -> .venv from the pinned files, then the site on http://127.0.0.1:8000
#   make test    -> .venv from the pinned files, the CJK font, Chromium, pytest
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

# Tiny models run several times faster single-threaded on small shared CPUs.
export OMP_NUM_THREADS ?= 1
export MKL_NUM_THREADS ?= 1
export NO_MKDOCS_2_WARNING ?= 1
# Progress lines show as they happen, in a terminal, a pipe or a log.
export PYTHONUNBUFFERED ?= 1

.PHONY: setup fonts serve build build-zh build-zensical test test-fast browser-deps bench lock clean

# Announces each step; keeps a torch already in .venv; CPU torch on Linux.
$(STAMP): pyproject.toml requirements/lock.txt requirements/torch.txt scripts/setup-venv.sh
	@PYTHON=$(PYTHON) VENV=$(VENV) bash scripts/setup-venv.sh
	@touch $@

setup: $(STAMP)

# A CJK font for the Chinese figure labels (installed when root on Debian, else named).
fonts: setup
	@VENV=$(VENV) bash scripts/ensure-fonts.sh

# The experiments and notebooks first (python -m llmlab.build.precompute; the build would
# run it too when they are stale), then the site.
serve: fonts
	@echo "serve: computing what the pages show (a few minutes the first time)"
	$(BIN)/python -m llmlab.build.precompute
	@echo "serve: building the site, then serving it on http://127.0.0.1:8000"
	$(BIN)/mkdocs serve -a 127.0.0.1:8000

build: fonts
	$(BIN)/python -m llmlab.build.precompute
	$(BIN)/mkdocs build --strict

# While writing: build the Chinese pages only (see README).
build-zh: fonts
	$(BIN)/python -m llmlab.build.precompute
	LLMLAB_BUILD_EN=false $(BIN)/mkdocs build

# Informational: the same site under Zensical, Material's successor, in .venv-zensical
# (its current release; site-zensical/). Not part of build or test: what it shows and
# the plan for Material's end of life are in CONTRIBUTING.md, "Zensical".
build-zensical: fonts
	$(BIN)/python -m llmlab.build.precompute
	@VENV=$(VENV) bash scripts/build-zensical.sh

browser-deps:
	@bash scripts/ensure-chromium.sh

# On two processes (pytest-xdist), a test module at a time: the full site is built once,
# by the first that needs it (conftest.py). Nothing asserts a timing.
test: fonts browser-deps
	$(BIN)/pytest -n 2 --dist loadscope

# Everything but the site build and the browser (most of the suite's time), on every
# core (pytest-xdist).
test-fast: setup
	$(BIN)/pytest -m "not site and not browser" -n auto

bench: setup
	$(BIN)/python benchmarks/build.py

# The lock is what a fresh environment resolves from pyproject.toml (torch excluded).
lock:
	rm -rf .venv-lock && $(PYTHON) -m venv .venv-lock
	.venv-lock/bin/pip install -q -r requirements/torch.txt \
	  --index-url https://download.pytorch.org/whl/cpu \
	  || .venv-lock/bin/pip install -q -r requirements/torch.txt
	.venv-lock/bin/pip install -q ".[docs,test,plot]"
	{ head -2 requirements/lock.txt; .venv-lock/bin/pip freeze --exclude-editable \
	  | grep -v -i '^torch==\|^llmlab'; } > requirements/lock.new
	mv requirements/lock.new requirements/lock.txt && rm -rf .venv-lock

clean:
	rm -rf site site-zensical .cache test-artifacts
