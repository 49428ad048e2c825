# Fresh-machine entry points: `make demo` (the main job on the embedded default) and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Pinned first, on its own: an unpinned `torch` (asked for directly or by a dependency) makes pip
# resolve the newest release with several GB of CUDA packages. Override for a CUDA machine.
TORCH_SPEC ?= torch==2.13.0
STAMP := $(VENV)/.lrda-installed
# Wheels are installed without bytecode (--no-compile), which Python writes as modules are first
# imported instead: the package imports a fraction of what the wheels ship (a few of
# transformers' hundreds of models), and compiling it all took longer than the install.
RUN := env -u PYTHONDONTWRITEBYTECODE
DEMO_OUT ?= out/demo
# Two workers, a test file each: many tests wait on processes and DDS rather than compute.
PYTEST_PARALLEL ?= -n 2 --dist loadfile

.PHONY: venv test demo speed lint clean

venv: $(STAMP)

$(STAMP): requirements.txt requirements-dev.txt setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --no-compile "$(TORCH_SPEC)"
	$(BIN)/python -m pip install --quiet --no-compile -r requirements-dev.txt
	# Official Depth Anything 3 code for the parity tests; its declared dependencies (xformers,
	# open3d, torchvision, numpy<2, ...) are not needed by its network and would replace torch.
	$(BIN)/python -m pip install --quiet --no-compile --no-deps depth-anything-3==0.1.1
	$(BIN)/python -m pip install --quiet --no-compile --no-deps --no-build-isolation -e .
	touch $@

test: venv
	$(RUN) $(BIN)/python -m pytest -q -ra --durations=20 $(PYTEST_PARALLEL)

demo: venv
	$(RUN) $(BIN)/lrda demo --output $(DEMO_OUT)

speed: venv
	$(RUN) $(BIN)/lrda speed

lint: venv
	$(BIN)/ament_flake8 lrda_ros test launch setup.py
	$(BIN)/ament_pep257 lrda_ros test launch

clean:
	rm -rf $(VENV) build install log *.egg-info
