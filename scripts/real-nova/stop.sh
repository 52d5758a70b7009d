#!/bin/bash
# Stop the real-Nova stack that start.sh started, and nothing else.
#
# start.sh starts every service with setsid and records its PID in $STATE/pids/NAME.pid, so the PID is
# also the id of a process group holding the service and its own children (beam.smp under the
# rabbitmq-server script, oslo.service workers under nova-api). A group is signalled only while its
# recorded PID is alive and still leads that group, so a recycled PID is never touched.
# TERM first; KILL what is left after REALNOVA_STOP_GRACE_S seconds (default 10).
#
# Usage: scripts/real-nova/stop.sh      (REALNOVA_STATE selects the state folder)
set -uo pipefail
source "$(dirname "$0")/lib/common.sh"

GRACE_S=${REALNOVA_STOP_GRACE_S:-10}

[ -d "$PIDS" ] || exit 0

# stop_groups NAME...: TERM the named services' groups, wait for them, KILL stragglers.
stop_groups() {
  local name pid groups=() i left
  for name in "$@"; do
    pid=$(pid_of "$name") || continue
    rm -f "$PIDS/$name.pid"
    if is_alive "$pid" && owns_group "$pid"; then
      kill -TERM -- "-$pid" 2>/dev/null && groups+=("$pid") && log "stopping $name (process group $pid)"
    fi
  done
  [ ${#groups[@]} -gt 0 ] || return 0
  for ((i = 0; i < GRACE_S * 10; i++)); do
    left=0
    for pid in "${groups[@]}"; do group_alive "$pid" && left=1; done
    [ $left = 0 ] && return 0
    sleep 0.1
  done
  for pid in "${groups[@]}"; do
    if group_alive "$pid"; then
      log "process group $pid ignored TERM for ${GRACE_S}s: KILL"
      kill -KILL -- "-$pid" 2>/dev/null
    fi
  done
}

# Clients before the servers they talk to, so nothing logs a storm of reconnect errors.
stop_groups nova-api nova-compute nova-scheduler nova-conductor neutron-stub glance-api placement keystone
stop_groups rabbitmq mariadb
stop_groups epmd
# Anything recorded that is not in the lists above (none today; keeps stop.sh honest if start.sh grows).
for f in "$PIDS"/*.pid; do
  [ -e "$f" ] || continue
  stop_groups "$(basename "$f" .pid)"
done
rm -f "$STATE/mode"
log "stopped"
