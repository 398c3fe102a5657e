# depthfinder: `make run` and `make test` set up .venv the first time.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

# The built-in demo on the default depths 1,2,4,6 (successive halving): a few minutes on a 2-core CPU.
RUN_ARGS ?= --dataset reviews-negation --summary-json summary.json

.PHONY: run test lint docs clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/depthfinder run $(RUN_ARGS)

test: $(STAMP)
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check .

docs: $(STAMP)
	$(BIN)/python -m flows.reference --write docs

clean:
	rm -rf .depthfinder mlflow.db mlruns mlartifacts summary.json
