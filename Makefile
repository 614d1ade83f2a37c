# Two commands set up a fresh machine: `make run` (installs, then opens the app) and
# `make test` (installs, then runs every test). The virtual environment lives in .venv.
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed

.PHONY: run test install bundle

run: $(STAMP)
	$(VENV)/bin/calibsim

test: $(STAMP)
	$(VENV)/bin/lint-imports
	QT_QPA_PLATFORM=offscreen $(VENV)/bin/python -m pytest -n auto --maxprocesses=4 -ra --durations=15

install: $(STAMP)

# Every benchmark at full size, one after the other (hours on two cores): the figures in
# benchmarks/results/*.json and benchmarks/README.md. `make test` runs them only with --quick.
.PHONY: bench
bench: $(STAMP)
	set -e; for script in $(filter-out benchmarks/common.py,$(wildcard benchmarks/*.py)); do \
		$(VENV)/bin/python $$script; done

# The desktop bundle dist/calibsim (PyInstaller; see packaging/README.md).
bundle: $(STAMP)
	bash packaging/build.sh

$(STAMP): pyproject.toml packaging/constraints-cpu.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --upgrade pip
	$(VENV)/bin/python -m pip install -c packaging/constraints-cpu.txt -e '.[test]'
	# the built-in model's fast engine, exported and checked once, so a user's first score is fast
	$(VENV)/bin/calibsim models --prepare || echo "calibsim: the fast engine was not prepared; scoring uses torch"
	touch $(STAMP)
