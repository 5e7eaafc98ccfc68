# kgrag — the two front-door commands are `make run` and `make test`; both install on first use.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
export PREFECT_HOME ?= $(CURDIR)/work/.prefect
export PREFECT_SERVER_ANALYTICS_ENABLED := false
# the first start of the ephemeral API migrates a fresh database: 20 s (the default) is too short on 2 cores
export PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS ?= 120
export PREFECT_LOGGING_LEVEL ?= WARNING
export LANGGRAPH_CLI_NO_ANALYTICS := 1
export LANGSMITH_TRACING := false

.PHONY: install assets run test docs bench bench-install lint clean

install: $(STAMP) assets

# The console's front-end libraries from the npm registry (web/package-lock.json), copied into
# kgrag/console/static/vendor/ (a no-op once they match the lockfile).
assets:
	@bash scripts/vendor_assets.sh

# (Re)install when the venv is missing or the package definition / pins changed.
$(STAMP): pyproject.toml constraints.txt scripts/system_packages.sh
	bash scripts/system_packages.sh
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e ".[dev,agent]"
	@# lightrag-hku (make bench-install) is installed --no-deps on purpose: its unmet requirements are not ours
	@out=$$($(PY) -m pip check 2>&1); rc=$$?; bad=$$(echo "$$out" | grep -vE '^(lightrag-hku|pipmaster) '); \
	if [ $$rc -ne 0 ] && [ -n "$$bad" ]; then echo "$$out"; exit 1; fi; echo "pip check: ok"
	touch $(STAMP)

run: $(STAMP) assets
	@mkdir -p $(PREFECT_HOME)
	$(VENV)/bin/kgrag run

# pytest exits 5 when it collects nothing: that is a failure too, with a message saying so.
# Two pytest-xdist workers (CI has 2 cores); tests/conftest.py groups the test files so that a file, the medical
# network and each server that must not run twice stay on one worker, and gives each worker one torch/BLAS thread
# (without that cap two workers' pipelines oversubscribed the cores and the suite was slower than one process),
# and hands out the longest groups first (tests/durations.json; xdist's own order is by test count).
# From a clean work dir on 2 cores: 9.6–10.8 min with two workers (issue 43). TEST_WORKERS=0 runs in one process.
TEST_WORKERS ?= 2
TEST_XDIST := $(if $(filter-out 0,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadgroup)
test: $(STAMP) assets
	@mkdir -p $(PREFECT_HOME)
	@$(PY) -m pytest -q --durations=10 $(TEST_XDIST); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: pytest collected no tests" >&2; exit 1; fi; exit $$rc

# The docs site (mkdocs.yml, docs/) with live reload; 8001 because 8000 is `kgrag serve`'s. Its CLI and HTTP
# reference pages are generated from the code at every build (docs/hooks/reference.py); `make test` builds the
# site with `mkdocs build --strict` (tests/test_docs_site.py).
DOCS_ADDR ?= 127.0.0.1:8001
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve --dev-addr $(DOCS_ADDR)

bench: $(STAMP)
	@mkdir -p $(PREFECT_HOME)
	$(PY) -m bench

# LightRAG for the query-mode benchmark's LightRAG side (no-deps install: see the requirements file).
bench-install: $(STAMP)
	$(PY) -m pip install --quiet -c constraints.txt --no-deps -r bench/requirements-lightrag.txt

lint: $(STAMP)
	$(PY) -m ruff check kgrag flows graphs harness bench tests docs/hooks

clean:
	rm -rf $(VENV) work .pytest_cache
