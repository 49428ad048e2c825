# Fresh-machine entry points: `make demo` (the main job on the embedded default) and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Pinned first, on its own: an unpinned `torch` (asked for directly or by a dependency) makes pip
# resolve the newest release with several GB of CUDA packages. Override for a CUDA machine.
TORCH_SPEC ?= torch==2.13.0
STAMP := $(VENV)/.lrda-installed
DEMO_OUT ?= out/demo
# Two workers, a test file each: many tests wait on processes and DDS rather than compute.
PYTEST_PARALLEL ?= -n 2 --dist loadfile

.PHONY: venv test demo bench lint clean

venv: $(STAMP)

$(STAMP): requirements.txt requirements-dev.txt setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$(TORCH_SPEC)"
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $@

test: venv
	$(BIN)/python -m pytest -q -ra --durations=20 $(PYTEST_PARALLEL)

demo: venv
	$(BIN)/lrda demo --output $(DEMO_OUT)

bench: venv
	$(BIN)/lrda bench

lint: venv
	$(BIN)/ament_flake8 lrda_ros test launch setup.py
	$(BIN)/ament_pep257 lrda_ros test launch

clean:
	rm -rf $(VENV) build install log *.egg-info
