#!/usr/bin/env bash
# `make docker-engine`: make sure a Docker engine answers `docker info`.
#
# An engine that already answers is left alone. Otherwise, as root on Debian: install
# Debian's docker.io and docker-compose (apt must not start services: this may be a
# container without an init), then start dockerd in the background with its log and pid
# file under .tools/, and wait (bounded) until it answers. Anywhere else: say what to do.
set -euo pipefail

TOOLS=${TOOLS_DIR:-.tools}
WAIT_S=${DOCKERD_WAIT_S:-60}
LOG=$TOOLS/dockerd.log
PIDFILE=$TOOLS/dockerd.pid

if docker info >/dev/null 2>&1; then
  echo "docker engine: answering ($(docker version --format '{{.Server.Version}}' 2>/dev/null))"
  exit 0
fi

if [ "$(id -u)" != 0 ] || [ ! -f /etc/debian_version ]; then
  cat >&2 <<'EOF'
docker engine: none answers `docker info`, and this script only installs one as root on
Debian. Install Docker Engine and Docker Compose for your system and start the daemon
(e.g. `sudo systemctl start docker`), or run `make docker-engine` as root on Debian.
EOF
  exit 1
fi

missing=()
command -v dockerd >/dev/null || missing+=(docker.io)
command -v docker-compose >/dev/null || docker compose version >/dev/null 2>&1 \
  || missing+=(docker-compose)
if [ ${#missing[@]} -gt 0 ]; then
  echo "docker engine: installing ${missing[*]} from Debian's packages"
  # policy-rc.d exit 101 is Debian's way to tell maintainer scripts not to start services.
  created_policy=
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    created_policy=1
  fi
  trap 'if [ -n "$created_policy" ]; then rm -f /usr/sbin/policy-rc.d; fi' EXIT
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 \
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

mkdir -p "$TOOLS"
if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
  echo "docker engine: dockerd $(cat "$PIDFILE") already started; waiting for it"
else
  echo "docker engine: starting dockerd (log $LOG, pid file $PIDFILE)"
  # Its own session: it outlives make and a Ctrl-C in this terminal.
  setsid dockerd >>"$LOG" 2>&1 </dev/null &
  echo $! >"$PIDFILE"
fi

deadline=$((SECONDS + WAIT_S))
until docker info >/dev/null 2>&1; do
  if ! kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
    echo "docker engine: dockerd exited; last lines of $LOG:" >&2
    tail -n 20 "$LOG" >&2
    exit 1
  fi
  if [ $SECONDS -ge $deadline ]; then
    echo "docker engine: dockerd did not answer within ${WAIT_S}s; last lines of $LOG:" >&2
    tail -n 20 "$LOG" >&2
    exit 1
  fi
  sleep 0.5
done
echo "docker engine: answering ($(docker version --format '{{.Server.Version}}'))"
