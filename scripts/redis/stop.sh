#!/bin/bash
# Stop the redis-server that scripts/redis/start.sh started (no-op when none runs).
set -euo pipefail
STATE="${REDIS_STATE:-${TMPDIR:-/tmp}/nova-guard-redis}"
if [ -f "$STATE/port" ]; then
  redis-cli -p "$(cat "$STATE/port")" shutdown nosave >/dev/null 2>&1 || true
  rm -f "$STATE/port" "$STATE/env"
  echo "redis/stop.sh: stopped" >&2
fi
