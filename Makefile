# Two commands do all set-up on a fresh machine (idempotent): `make demo`, `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
# The CPU wheel of torch lies on this machine's disk; pinning it keeps pip from pulling a
# multi-GB CUDA build. Only the heavy (optional) backends need it.
TORCH_PIN ?= torch==2.13.0

.PHONY: demo test test-baseline imports test-ray fuzz lint bench bench-ray clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q '$(TORCH_PIN)'
	$(PY) -m pip install -q -e '.[dev,heavy,ray,web]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/streameval demo $(ARGS)

# Tests run on one process more than the cores, up to 4 (pytest-xdist): most of the suite is
# whole pipelines, each on one core, and a third of it is real-time sessions that mostly wait
# (measured on 2 cores: 567 s on 3 processes against 639 s on 2). Modules that share cached
# episodes stay on one worker (xdist_group). TEST_WORKERS=0 runs serially.
TEST_WORKERS ?= $(shell python3 -c "import os; print(min(4, (os.cpu_count() or 1) + 1))")
test: $(STAMP)
	HF_HUB_OFFLINE=1 $(PY) -m pytest -q -n $(TEST_WORKERS) --maxprocesses=4 --dist loadgroup -m "not long and not ray" $(ARGS)

# The tests that depend on what the CPU computes natively (marker cpu_features), again as a CPU
# without AVX-512 and native bfloat16 would run them (an AMD EPYC, say): streameval/core/cpu.py.
# `.ci/run` runs them after `make test`; `STREAMEVAL_CPU_FEATURES=baseline make test` runs the
# whole suite so (a user's clone on such a CPU).
test-baseline: $(STAMP)
	STREAMEVAL_CPU_FEATURES=baseline HF_HUB_OFFLINE=1 $(PY) -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --maxprocesses=4 --dist loadgroup -m "cpu_features and not long and not ray" $(ARGS)

# Load and stress tests (4 sessions at 16 FPS over MQTT and WebRTC; SIGKILL at random moments
# of replay/rescore/attach) and the episodes that repeat in kind what `make test` covers
# (further validity defects, calibration sweeps, TransNetV2 pools, the late server on every
# style, Global Memory on all 15 actions, every spoiled sidecar, the 20 s memory episodes):
# their own command, run before merging a change they cover (the figures they measured are in
# their docstrings). Each test says in a comment what of it `make test` keeps.
test-long: $(STAMP)
	HF_HUB_OFFLINE=1 $(PY) -m pytest -q -p no:cacheprovider -m long $(ARGS)

# The fuzz suite with 10,000+ generated cases (the normal test run has a 400-case subset).
FUZZ_CASES ?= 10000
fuzz: $(STAMP)
	FUZZ_CASES=$(FUZZ_CASES) HF_HUB_OFFLINE=1 $(PY) -m pytest -q -p no:cacheprovider tests/fuzz $(ARGS)

# The Ray tests (a local 2-CPU instance, ~90 s here): Ray fan-out is optional (extra
# `ray`), so they are their own command like the long suites, run before resolving.
test-ray: $(STAMP)
	HF_HUB_OFFLINE=1 $(PY) -m pytest -q -m ray $(ARGS)

# The import layers, as import-linter contracts (pyproject.toml [tool.importlinter]); run on the
# tree laid out as the installed namespace (tools/typecheck_tree.sh), as mypy is.
imports: $(STAMP)
	tools/typecheck_tree.sh >/dev/null
	cd build/typecheck && ../../$(VENV)/bin/lint-imports --config ../../pyproject.toml

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	tools/typecheck_tree.sh >/dev/null
	cd build/typecheck && ../../$(VENV)/bin/mypy --config-file ../../pyproject.toml -p streameval

bench: $(STAMP)
	$(PY) bench/throughput.py

bench-ray: $(STAMP)
	$(PY) bench/ray_batch.py $(ARGS)

clean:
	rm -rf $(VENV) build *.egg-info
