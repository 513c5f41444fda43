# The reference lock clients (clients/README.md): programs speaking docs/client-protocol.md,
# each over one real library, built from pinned versions. `make clients` puts a launcher
# per client in $(CLIENTS_DIR)/bin/ (run it as [path, args...]); a missing toolchain skips
# that client (said, not an error). Low parallelism: the machine is shared.
CLIENTS_DIR ?= $(CURDIR)/.tools/clients
GO ?= $(or $(shell command -v go),$(wildcard /usr/local/go/bin/go))
NPM ?= $(shell command -v npm)
MVN ?= $(shell command -v mvn)
# A launcher: `exec COMMAND "$@"`, COMMAND given relative to the launcher's directory.
define launcher
printf '#!/bin/sh\n# %s: a lockharness reference client (clients/README.md)\nhere=$$(dirname "$$(readlink -f "$$0")")\nexec %s "$$@"\n' \
  $(1) '$(2)' > $(CLIENTS_DIR)/bin/$(1) && chmod +x $(CLIENTS_DIR)/bin/$(1)
endef

.PHONY: clients client-redsync client-go-zero client-node-redlock client-redis-semaphore \
  client-redisson client-versions

clients: client-redsync client-go-zero client-node-redlock client-redis-semaphore client-redisson
	@echo "client launchers in $(CLIENTS_DIR)/bin:"; ls -1 $(CLIENTS_DIR)/bin 2>/dev/null | sed 's/^/  /'

# -trimpath, no VCS stamp, go.sum read-only: the same sources give the same binary.
client-redsync:
	@if [ -z "$(GO)" ]; then echo "skipped redsync: no go toolchain"; exit 0; fi; \
	mkdir -p $(CLIENTS_DIR)/bin && \
	cd clients/redsync && $(GO) build -p 1 -mod=readonly -trimpath -buildvcs=false \
	  -o $(CLIENTS_DIR)/bin/redsync . && echo "built redsync"

client-go-zero:
	@if [ -z "$(GO)" ]; then echo "skipped go-zero: no go toolchain"; exit 0; fi; \
	mkdir -p $(CLIENTS_DIR)/bin && \
	cd clients/go-zero && $(GO) build -p 1 -mod=readonly -trimpath -buildvcs=false \
	  -o $(CLIENTS_DIR)/bin/go-zero . && echo "built go-zero"

# npm ci installs exactly package-lock.json, into a copy of the package.
client-node-redlock:
	@if [ -z "$(NPM)" ] || ! command -v node >/dev/null; then \
	  echo "skipped node-redlock: no node/npm"; exit 0; fi; \
	rm -rf $(CLIENTS_DIR)/node-redlock && mkdir -p $(CLIENTS_DIR)/node-redlock $(CLIENTS_DIR)/bin && \
	cp clients/node-redlock/package.json clients/node-redlock/package-lock.json \
	  clients/node-redlock/client.js $(CLIENTS_DIR)/node-redlock/ && \
	(cd $(CLIENTS_DIR)/node-redlock && \
	  $(NPM) ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error) && \
	$(call launcher,node-redlock,node "$$here/../node-redlock/client.js") && \
	echo "built node-redlock"

# The same, for redis-semaphore.
client-redis-semaphore:
	@if [ -z "$(NPM)" ] || ! command -v node >/dev/null; then \
	  echo "skipped redis-semaphore: no node/npm"; exit 0; fi; \
	rm -rf $(CLIENTS_DIR)/redis-semaphore && mkdir -p $(CLIENTS_DIR)/redis-semaphore $(CLIENTS_DIR)/bin && \
	cp clients/redis-semaphore/package.json clients/redis-semaphore/package-lock.json \
	  clients/redis-semaphore/client.js $(CLIENTS_DIR)/redis-semaphore/ && \
	(cd $(CLIENTS_DIR)/redis-semaphore && \
	  $(NPM) ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error) && \
	$(call launcher,redis-semaphore,node "$$here/../redis-semaphore/client.js") && \
	echo "built redis-semaphore"

# One shaded jar, two clients: the launcher passes the client's name. HotSpot prints its
# own warnings on stdout, the reply channel: -Xlog sends them to stderr, and no perf-data
# file means no "Cannot use file /tmp/hsperfdata_root/<pid>" when a pid is reused.
JAVA_FLAGS := -XX:+UseSerialGC -XX:-UsePerfData -Xlog:disable -Xlog:all=warning:stderr
client-redisson:
	@if [ -z "$(MVN)" ] || ! command -v java >/dev/null; then \
	  echo "skipped redisson: no java/mvn"; exit 0; fi; \
	mkdir -p $(CLIENTS_DIR)/bin && \
	$(MVN) -q -B -T 1 -f clients/redisson/pom.xml package && \
	cp clients/redisson/target/redisson-client.jar $(CLIENTS_DIR)/redisson.jar && \
	$(call launcher,redisson-redlock,java $(JAVA_FLAGS) -jar "$$here/../redisson.jar" redisson-redlock) && \
	$(call launcher,redisson-rlock,java $(JAVA_FLAGS) -jar "$$here/../redisson.jar" redisson-rlock) && \
	echo "built redisson (redisson-redlock, redisson-rlock)"

# Other releases of the clients' libraries (NAME@VERSION, workloads/versions/), built once
# into .tools/versions/ by the harness itself, as a run's first use would: the ones
# tests/test_client_versions.py runs. A missing toolchain skips that one (said).
CLIENT_VERSIONS ?= redsync@v4.17.0 redsync@v4.0.3 redsync@v4.0.4 node-redlock@5.0.0-beta.1 \
  redisson-rlock@3.40.0 pottery-redlock@3.0.0 go-zero@v1.3.1 go-zero@v1.3.2 \
  redis-semaphore@5.3.0 redis-semaphore@5.3.1
client-versions: python-env
	@for client in $(CLIENT_VERSIONS); do \
	  $(CURDIR)/.venv/bin/python -m lockharness build-client $$client \
	    || echo "skipped $$client: could not build it here (above)"; \
	done
