# The two commands a fresh machine needs are `make run` and `make test` (see README.md).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
# The install compiles the Dutch engine's core (setup.py): a change to it installs again.
BUILD_INPUTS := pyproject.toml setup.py libs/arbiter/competition/_dutch_core.c
STAMP := $(VENV)/.installed-$(shell cat $(BUILD_INPUTS) | cksum | cut -d' ' -f1)

.PHONY: setup run lint test unit integration e2e proto proto-check bench chaos clean

$(STAMP): $(BUILD_INPUTS)
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info[:2] >= (3, 11) else "Python 3.11 or newer is required")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

setup: $(STAMP)

proto: setup
	$(BIN)/python proto/generate.py

proto-check: setup
	$(BIN)/python proto/generate.py --check

run: setup
	$(BIN)/arbiter up --demo

# Four workers, each with its own broker, Redis and database (tests/conftest.py's session fixtures);
# a file's tests stay on one worker so that its module-scoped services are shared. Most of a system
# test's time is spent waiting on the systems it started, so two cores keep four workers busy. Files
# are handed out in the order collected (testpaths: end-to-end, then integration, then unit) rather
# than by their number of tests: the longest files start first and the short ones fill the end.
# The unit layer waits for nothing: one worker per core runs it fastest (more share the cores).
TEST_WORKERS ?= 4
UNIT_WORKERS ?= 2
PARALLEL := -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

# The linter and the type checker; what each covers is set in pyproject.toml (ruff: the whole tree but
# the generated contracts; mypy: its `files`), so that running either bare gives the same answer as here.
lint: setup
	$(BIN)/ruff check
	$(BIN)/mypy

test: setup proto-check tools lint
	$(BIN)/pytest $(PARALLEL)

unit: setup
	$(BIN)/pytest -n $(UNIT_WORKERS) --dist loadfile tests/unit

integration: setup
	$(BIN)/pytest $(PARALLEL) tests/integration

e2e: setup
	$(BIN)/pytest $(PARALLEL) tests/e2e

bench: setup
	@for script in tests/bench/bench_*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done

clean:
	rm -rf .arbiter .pytest_cache .hypothesis

# Tools the tests run (root only: Debian's packages, when missing):
# - docker-compose for the deploy tests (`docker-compose config`);
# - prometheus, which brings promtool, for the alert-rule tests (`promtool test rules`) and the
#   dashboards' end-to-end test (a real Prometheus scraping the embedded stack). On a machine
#   with systemd the package also starts a system Prometheus on :9090; the tests start their own.
.PHONY: tools
tools:
	@if command -v docker-compose >/dev/null 2>&1 || docker compose version >/dev/null 2>&1; then \
		:; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing docker-compose (Debian)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-compose >/dev/null; \
	else \
		echo "docker-compose is missing; install it with:"; \
		echo "  sudo apt-get update && sudo apt-get install -y docker-compose   (or Docker Compose v2)"; \
	fi
	@if command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1; then \
		:; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing prometheus and promtool (Debian)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null; \
	else \
		echo "prometheus (and its promtool) is missing; install it with:"; \
		echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends prometheus"; \
	fi

# The chaos suite (faults, listed in docs/architecture.md): every service killed, poison,
# watchers, events redelivered, broker paused and killed, Redis flushed and killed, PostgreSQL stormed and
# restarted, then scaled out; figures printed and written to .arbiter/chaos-results.json. Not in `make test`.
chaos: setup
	$(BIN)/pytest tests/chaos -s
