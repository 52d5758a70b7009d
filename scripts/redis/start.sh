#!/bin/bash
# Start a throw-away redis-server on 127.0.0.1 for nova-guard's fleet-ledger tests and demos.
#
# Installs Debian's redis-server when it is missing (needs root and the Debian mirror), starts it on
# a free loopback port (or $REDIS_PORT) with no persistence (--save '' --appendonly no), daemonized,
# with its state under $REDIS_STATE (default $TMPDIR/nova-guard-redis). Prints `export NOVA_GUARD_REDIS_URL=...`
# (eval it) and writes the same line to $REDIS_STATE/env. Idempotent: a server started by an earlier
# run that still answers is reused. scripts/redis/stop.sh stops it.
#
# On a machine shared with other users or CI jobs, give each its own REDIS_STATE: with the default
# state directory a second start.sh reuses the first one's server, and either stop.sh stops it for both.
#
# Usage: eval "$(scripts/redis/start.sh)"
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
STATE="${REDIS_STATE:-${TMPDIR:-/tmp}/nova-guard-redis}"
mkdir -p "$STATE"
log() { echo "redis/start.sh: $*" >&2; }

if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
  [ "$(id -u)" = 0 ] || { log "redis-server is missing. Run as root, or: apt-get install redis-server"; exit 1; }
  log "installing Debian's redis-server (log: $STATE/apt.log)"
  created_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    # Exit status 101 keeps the package's maintainer scripts from starting a system-wide redis.
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d && created_policy=1
  fi
  ok=1
  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=300 redis-server redis-tools; } >"$STATE/apt.log" 2>&1 || ok=0
  [ "$created_policy" = 1 ] && rm -f /usr/sbin/policy-rc.d
  [ "$ok" = 1 ] || { log "apt-get could not install redis-server:"; tail -n 20 "$STATE/apt.log" >&2; exit 1; }
fi

if [ -f "$STATE/port" ] && redis-cli -p "$(cat "$STATE/port")" ping 2>/dev/null | grep -q PONG; then
  log "reusing the redis-server on port $(cat "$STATE/port")"
else
  PORT="${REDIS_PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')}"
  redis-server --bind 127.0.0.1 --port "$PORT" --save '' --appendonly no --dir "$STATE" \
    --daemonize yes --pidfile "$STATE/redis.pid" --logfile "$STATE/redis.log"
  for _ in $(seq 1 100); do
    redis-cli -p "$PORT" ping 2>/dev/null | grep -q PONG && break
    sleep 0.05
  done
  redis-cli -p "$PORT" ping 2>/dev/null | grep -q PONG || { log "redis-server did not answer:"; tail -n 20 "$STATE/redis.log" >&2; exit 1; }
  echo "$PORT" >"$STATE/port"
  log "redis-server answers on 127.0.0.1:$PORT"
fi
echo "export NOVA_GUARD_REDIS_URL=redis://127.0.0.1:$(cat "$STATE/port")" | tee "$STATE/env"
