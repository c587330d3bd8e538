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

.PHONY: setup demo test dry-run lint reanalyze-dataflex report-dataflex clean-demo

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.txt
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e .
	touch $@

setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/snakemake $(PROFILE_ARG) --cores $(CORES)

dry-run: $(STAMP)
	$(BIN)/snakemake $(PROFILE_ARG) --cores $(CORES) -n

# ruff (configured in pyproject.toml) on the Python code and notebooks, then Snakemake's own lint of the workflow
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/snakemake --lint

test: $(STAMP)
	$(BIN)/pytest -q

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
