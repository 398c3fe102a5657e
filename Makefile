# depthfinder: `make run` and `make test` set up .venv the first time.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
# The versions the suite passed with (torch left to pyproject's range: a GPU machine gets its CUDA build).
CONSTRAINTS := constraints.txt

# The built-in demo (README, Quick start): depths 1, 2, 4 by successive halving, two candidates at once in worker
# processes (each trains on one thread), so both cores of a 2-core CPU work; the default sweep (depths 1, 2, 4, 6,
# one at a time) reaches the same decision in about twice the time.
RUN_ARGS ?= --dataset reviews-negation --depths 1,2,4 --halving on --workers 2 --task-runner processes \
	--summary-json summary.json

.PHONY: run test test-slow test-exhaustive lint docs lock clean stack-up stack-down test-stack

$(STAMP): pyproject.toml $(CONSTRAINTS)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -c $(CONSTRAINTS) -e '.[dev,stack,sentencepiece,onnx]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/depthfinder run $(RUN_ARGS)

WORKERS ?= 2

# WORKERS workers (pytest-xdist), each test file on one, so a file's shared fixtures are built once. MARK picks other
# tests than pyproject's default (`not slow and not stack`): .ci/run runs the slow ones in the same session
# (`make test MARK='not stack and not exhaustive'`), so a file's fast and slow tests share its fixtures.
test: $(STAMP)
	$(BIN)/python -m pytest -n $(WORKERS) --dist loadfile --no-loadscope-reorder $(if $(MARK),-m "$(MARK)")

# What `make test` leaves out as slow, which .ci/run runs too: interrupts at more moments, a model loaded in a
# fresh virtual environment of its own requirements, every encoder type end to end, a two-level problem. Not the
# stack's slow tests (the browser test): `make test-stack` runs them against the stack.
test-slow: $(STAMP)
	$(BIN)/python -m pytest -m 'slow and not exhaustive and not stack' -n 2 --dist loadfile --no-loadscope-reorder

# Out of .ci/run (a faster test covers each): every cell of the signal matrix, a disk that really fills up.
test-exhaustive: $(STAMP)
	$(BIN)/python -m pytest -m exhaustive -n 2

# The team stack on this machine (docs/operations.md): PostgreSQL, MLflow and Prefect servers, a worker, Dask.
stack-up: $(STAMP)
	$(BIN)/python -m depthfinder.runtime.stack up

stack-down: $(STAMP)
	$(BIN)/python -m depthfinder.runtime.stack down

# The integration suite against the stack: uses the one `make stack-up` started, else brings up its own.
test-stack: $(STAMP)
	$(BIN)/python -m pytest -m stack tests/stack

lint: $(STAMP)
	$(BIN)/ruff check .

docs: $(STAMP)
	$(BIN)/python -m depthfinder.cli.reference --write docs

# Refresh constraints.txt: the newest versions pyproject admits, resolved in a fresh environment
# with every extra, then pinned (torch and its CUDA packages stay free).
lock:
	rm -rf .lock-venv
	$(PYTHON) -m venv .lock-venv
	.lock-venv/bin/python -m pip install --quiet -e '.[dev,stack,sentencepiece,onnx]'
	printf '%s\n' "# The versions the test suite passed with; make installs with them. Refresh: make lock." \
		"# torch is left to pyproject's range, so a GPU machine installs its CUDA build." > $(CONSTRAINTS)
	.lock-venv/bin/python -m pip freeze --exclude-editable \
		| grep -v -i -E '^(torch==|nvidia-|triton==|depthfinder)' >> $(CONSTRAINTS)
	rm -rf .lock-venv

clean:
	rm -rf .depthfinder mlflow.db mlruns mlartifacts summary.json
