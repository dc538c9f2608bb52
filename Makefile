# Two commands do all set-up on a fresh machine (idempotent): `make demo`, `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
# The CPU wheel of torch lies on this machine's disk; pinning it keeps pip from pulling a
# multi-GB CUDA build. Only the heavy (optional) backends need it.
TORCH_PIN ?= torch==2.13.0

.PHONY: demo test fuzz lint bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q '$(TORCH_PIN)'
	$(PY) -m pip install -q -e '.[dev,heavy]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/streameval demo $(ARGS)

test: $(STAMP)
	HF_HUB_OFFLINE=1 $(PY) -m pytest -q $(ARGS)

# The fuzz suite with 10,000+ generated cases (the normal test run has a 400-case subset).
FUZZ_CASES ?= 10000
fuzz: $(STAMP)
	FUZZ_CASES=$(FUZZ_CASES) HF_HUB_OFFLINE=1 $(PY) -m pytest -q -p no:cacheprovider tests/fuzz $(ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	tools/typecheck_tree.sh >/dev/null
	cd build/typecheck && ../../$(VENV)/bin/mypy --config-file ../../pyproject.toml -p streameval

bench: $(STAMP)
	$(PY) bench/throughput.py

clean:
	rm -rf $(VENV) build *.egg-info
