# `make demo` and `make test` set everything up on a fresh machine (README.md, docs/index.md).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
TOOLS := .tools/bin
TOXIPROXY_VERSION := v2.12.0
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: generated docs lock setup python-env redis-server toxiproxy chromium ssh-hosts docker-engine images compose-ready bench-compose bench-compose-reaper demo matrix matrix-polyglot test test-unit test-server test-fast test-all bench bench-quick bench-real-bugs lint docs clean

# The reference lock clients are built when their toolchains are here (clients/clients.mk).
setup: python-env redis-server toxiproxy chromium ssh-hosts clients client-versions

python-env: $(VENV)/.installed

# The venv is exactly the lock (docs/dependencies.md): every Python package, direct and
# transitive, at the version and hashes in requirements.lock, so a fresh machine builds what
# was tested. The installer and build backend (requirements-build.lock) come first, from
# the same lock: redlock-py ships only a source archive, built here without isolation so
# that its build backend is the pinned one too. `pip check`: the lock is whole.
PIP := $(BIN)/python -m pip --disable-pip-version-check
$(VENV)/.installed: pyproject.toml setup.py checker/_scan.c requirements.lock requirements-build.lock
	$(PYTHON) -m venv --clear $(VENV)
	$(PIP) install --quiet --require-hashes --no-deps -r requirements-build.lock
	$(PIP) install --quiet --require-hashes --no-deps --no-build-isolation -r requirements.lock
	$(PIP) install --quiet --no-deps --no-build-isolation -e .
	$(PIP) check
	touch $@

# `make lock`: resolve requirements.lock anew from pyproject.toml's ranges (the newest
# releases they allow), for Python 3.11 and later on any platform, with uv (a pinned
# release, in .tools/uv). Run `make test` on the new lock before committing it.
UV_VERSION := 0.13.9
UV := .tools/uv/bin/uv
LOCK_FLAGS := --universal --python-version 3.11 --generate-hashes --quiet \
  --custom-compile-command 'make lock'
$(UV):
	$(PYTHON) -m venv .tools/uv && .tools/uv/bin/python -m pip install --quiet uv==$(UV_VERSION)

lock: $(UV)
	$(UV) pip compile pyproject.toml --extra dev --extra clients $(LOCK_FLAGS) -o requirements.lock
	printf 'pip\nsetuptools\n' | $(UV) pip compile - --constraint requirements.lock $(LOCK_FLAGS) \
	  -o requirements-build.lock

# Debian's redis-server when none is found; apt must not start it as a service.
redis-server:
	@if [ -n "$$LOCKHARNESS_REDIS_SERVER" ] || command -v redis-server >/dev/null; then \
	  echo "redis-server: $$(command -v redis-server || echo $$LOCKHARNESS_REDIS_SERVER)"; \
	else \
	  echo "installing redis-server from Debian's packages"; \
	  $(SUDO) apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 apt-get install -y -qq redis-server >/dev/null && \
	  { $(SUDO) service redis-server stop >/dev/null 2>&1 || true; }; \
	fi

# Debian's chromium when none is found: the report tests render timeline.html headless.
chromium:
	@if command -v chromium >/dev/null; then \
	  echo "chromium: $$(command -v chromium)"; \
	else \
	  echo "installing chromium from Debian's packages"; \
	  $(SUDO) apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	fi

# Debian's openssh-server, openssh-client and iproute2 when one is missing: the plug-in's
# xdist tests make two hosts as network namespaces, each with its own sshd
# (tests/netns_hosts.py). apt must not start sshd as a service.
ssh-hosts:
	@missing=""; \
	[ -x /usr/sbin/sshd ] || missing="$$missing openssh-server"; \
	command -v ssh >/dev/null || missing="$$missing openssh-client"; \
	command -v ip >/dev/null || [ -x /usr/sbin/ip ] || missing="$$missing iproute2"; \
	if [ -z "$$missing" ]; then \
	  echo "sshd, ssh, ip: found"; \
	else \
	  echo "installing$$missing from Debian's packages"; \
	  $(SUDO) apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 apt-get install -y -qq $$missing >/dev/null && \
	  { $(SUDO) service ssh stop >/dev/null 2>&1 || true; }; \
	fi

# Toxiproxy v2.12.0 built from its Go module (the binary is named `server`).
toxiproxy:
	@if [ -n "$$LOCKHARNESS_TOXIPROXY_SERVER" ] || [ -x $(TOOLS)/toxiproxy-server ] \
	    || command -v toxiproxy-server >/dev/null; then \
	  echo "toxiproxy-server: found"; \
	else \
	  echo "building Toxiproxy $(TOXIPROXY_VERSION) with go install"; \
	  mkdir -p $(TOOLS) .tools/gobin && \
	  GOBIN=$(CURDIR)/.tools/gobin go install github.com/Shopify/toxiproxy/v2/cmd/server@$(TOXIPROXY_VERSION) && \
	  mv .tools/gobin/server $(TOOLS)/toxiproxy-server; \
	fi

# The Docker Compose backend's engine: nothing when `docker info` answers; as root on Debian,
# Debian's docker.io + docker-compose and a dockerd in the background (.tools/dockerd.log).
docker-engine:
	@TOOLS_DIR=.tools bash compose/docker-engine.sh

# The Compose backend's images, built offline from this machine's redis-server and Toxiproxy.
images: python-env redis-server toxiproxy docker-engine
	$(BIN)/python -m lockharness images

# The mission in about two minutes: safe baselines, a broken release, the Redlock restart
# counter-example and its recovery policy, a GC pause and a failover, each at its own
# default duration. Exit 0 iff every verdict is as expected. (`lockharness suite all`
# runs every built-in scenario.)
DEMO_SCENARIOS := single-baseline redlock-baseline unsafe-release-demo \
  redlock-restart-no-persistence redlock-delayed-restart client-gc-pause failover-promote-unsafe
demo: setup
	$(BIN)/python -m lockharness suite $(DEMO_SCENARIOS) \
	  --junit store/demo-junit.xml --html store/demo-index.html

# The third-party lock libraries under the faults' scenarios: every scenario with every
# library (expectations per client come from each scenario's expect / expect_clients).
# About 20 minutes.
MATRIX_SCENARIOS := redlock-baseline redlock-kill-minority redlock-partition-minority \
  redlock-latency redlock-restart-no-persistence redlock-power-loss-everysec \
  redlock-delayed-restart redlock-clock-jump client-gc-pause single-restart-no-persistence
THIRD_PARTY_CLIENTS := redis-py-lock,pottery-redlock,redlock-py,python-redis-lock,python-redis-lock-renewal
matrix: setup
	$(BIN)/python -m lockharness suite $(MATRIX_SCENARIOS) --clients $(THIRD_PARTY_CLIENTS) \
	  --junit store/matrix-junit.xml --html store/matrix-index.html

# The reference clients in other languages (clients/README.md) under the same scenarios.
# The JVM clients run one client per worker: a JVM per client, 12 of them on 2 cores, put
# the load average near 20 and Redisson's own 50 ms timeouts fired on an idle cluster.
# About 20 minutes.
NATIVE_CLIENTS := redsync,node-redlock
JVM_CLIENTS := redisson-redlock,redisson-rlock
matrix-polyglot: setup
	$(BIN)/python -m lockharness suite $(MATRIX_SCENARIOS) --clients $(NATIVE_CLIENTS) \
	  --junit store/matrix-polyglot-junit.xml --html store/matrix-polyglot-index.html
	$(BIN)/python -m lockharness suite $(MATRIX_SCENARIOS) --clients $(JVM_CLIENTS) --threads 1 \
	  --junit store/matrix-polyglot-jvm-junit.xml --html store/matrix-polyglot-jvm-index.html

# Lint (ruff, ruff format, mypy), the docs' strict build, then every test but the slow ones
# in one pytest session: the unit tests (no server) fill the time the server tests spend
# waiting on servers, containers and run durations. pytest's exit 5 (no test selected)
# fails the target, as any non-zero exit does.
test: lint docs test-fast

# The tests run PYTEST_JOBS at a time (pytest-xdist; worksteal evens out the long ones at
# the end). Each test holds its ports machine-wide (cluster/ports.py) and keeps its runs in
# its own tmp_path, so tests side by side never see each other's servers, runs or stores.
# `make test PYTEST_JOBS=0` runs them one after another, in pytest's own process. Three on
# a 2-core machine: most tests wait on servers and run durations, and at two the suite used
# 1.2 cores of 2 (docs/performance.md, "The test suite").
PYTEST_JOBS ?= 3
PYTEST := $(BIN)/python -m pytest -q -p no:cacheprovider -n $(PYTEST_JOBS) --dist worksteal

test-unit: setup
	$(PYTEST) -m 'unit and not slow'

# The server tests include the Compose backend's: they need the engine and the images. Under
# CI (CI=true) a missing engine fails the run; elsewhere those tests say why they skip.
compose-ready: python-env redis-server toxiproxy
	@if [ "$$CI" = true ]; then $(MAKE) --no-print-directory docker-engine images; \
	else $(MAKE) --no-print-directory docker-engine images \
	  || echo "no Docker engine: the Compose backend's tests will be skipped"; fi

test-server: setup compose-ready
	$(PYTEST) -m 'server and not slow'

test-fast: setup compose-ready
	$(PYTEST) -m 'not slow' --durations=25

test-all: setup
	$(PYTEST) -m ''

# With an engine (compose-ready), the Compose backend is measured beside the local one.
bench: setup compose-ready
	$(BIN)/python -m bench

# Compose beside local: bring-up and teardown of 5 nodes + resource + Toxiproxy, median of 5.
# The corpus of real lock bugs (docs/real-bugs.md): each buggy release explored under its
# model over 3 seeds, each fixed one once, 10 minutes each: hours; --only and --budget to
# take less. Writes the figures the page's table is generated from.
bench-real-bugs: setup
	$(BIN)/python -m bench.real_bugs --json bench/real_bugs/figures.json

bench-compose: setup images
	$(BIN)/python -m bench.compose_bringup

# A SIGKILLed controller: seconds until its reaper removed every container, median of 5.
bench-compose-reaper: setup images
	$(BIN)/python -m bench.compose_reaper

bench-quick: setup compose-ready
	$(BIN)/python -m bench --seeds 2 --explore 2m

# mypy reads the package through a tree of links, .tools/typecheck/lockharness (pyproject.toml):
# the editable install maps lockharness.<folder> to the folders by an import hook it cannot see.
TYPECHECK := .tools/typecheck/lockharness
lint: python-env
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	@rm -rf $(TYPECHECK) && mkdir -p $(TYPECHECK) && \
	for p in lockharness/*.py $$(ls -d */__init__.py | xargs -n1 dirname); do \
	  case $$p in tests|bench|lockharness) ;; *) ln -s $(CURDIR)/$$p $(TYPECHECK)/;; esac; \
	done
	$(BIN)/mypy

# The docs site (docs/, mkdocs.yml) into build/site; --strict: a broken link, a missing
# #anchor or a page left out of the nav fails the build.
# What follows from the declarations of fault kinds, lock clients and the scenario: the
# shipped JSON Schema and the docs' tables (tests/generated.py; tests fail while one is stale).
generated: python-env
	$(BIN)/python -m tests.generated

docs: python-env
	$(BIN)/mkdocs build --strict --site-dir build/site

clean:
	rm -rf $(VENV) .tools store

include clients/clients.mk
