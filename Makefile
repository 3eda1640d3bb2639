# The two commands a fresh machine needs are `make run` and `make test` (see README.md).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: setup run test unit integration e2e proto proto-check bench chaos clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else "Python 3.11 is required (py4swiss ships only a CPython 3.11 wheel)")'
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

# Two workers, each with its own broker, Redis and database (tests/conftest.py's session fixtures);
# a file's tests stay on one worker so that its module-scoped services are shared.
TEST_WORKERS ?= 2
PARALLEL := -n $(TEST_WORKERS) --dist loadfile

test: setup proto-check tools
	$(BIN)/pytest $(PARALLEL)

unit: setup
	$(BIN)/pytest $(PARALLEL) tests/unit

integration: setup
	$(BIN)/pytest $(PARALLEL) tests/integration

e2e: setup
	$(BIN)/pytest $(PARALLEL) tests/e2e

bench: setup
	@for script in tests/bench/bench_*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done

clean:
	rm -rf .arbiter .pytest_cache .hypothesis

# docker-compose for the deploy tests (`docker-compose config`): Debian's package when
# neither `docker-compose` nor `docker compose` is on the machine (root only).
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

# The chaos suite (issue 10, faults): services killed, events redelivered, broker paused, Redis
# flushed, PostgreSQL stormed; figures printed and written to .arbiter/chaos-results.json. Not in `make test`.
chaos: setup
	$(BIN)/pytest tests/chaos -s
