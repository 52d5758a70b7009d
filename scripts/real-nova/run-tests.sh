#!/bin/bash
# npm run test:real-nova: the integration and fidelity suites (test/integration/) against a real Nova.
#
# With NOVA_ENDPOINT and NOVA_TOKEN already set, the suites run against that stack and nothing is
# started or stopped. Otherwise an already running harness stack is reused (and left running), or
# start.sh starts one and this script stops it again on exit, whatever happens.
# Never skips: when the stack cannot be set up, it exits 1 with the harness's log tail (start.sh prints
# it). Extra arguments go to vitest, e.g. `npm run test:real-nova -- test/integration/quota.test.ts`.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
cd "$REPO_DIR"

now() { date +%s%N; }
secs() { awk -v ns="$1" 'BEGIN { printf "%.1f", ns / 1e9 }'; }
SETUP_NS=0 SUITE_NS=0 STOP_NS=0 STARTED_HERE=0

report() {
  local rc=$? t
  if [ "$STARTED_HERE" = 1 ]; then
    t=$(now)
    "$HARNESS_DIR/stop.sh" || rc=1
    STOP_NS=$(($(now) - t))
  fi
  echo "real-nova timings: setup $(secs $SETUP_NS) s, suite $(secs $SUITE_NS) s, stop $(secs $STOP_NS) s (exit $rc)" >&2
  exit $rc
}
trap report EXIT
trap 'exit 130' INT TERM # an interrupt runs the EXIT trap too

t=$(now)
if [ -n "${NOVA_ENDPOINT:-}" ] && [ -n "${NOVA_TOKEN:-}" ]; then
  log "using the Nova named by NOVA_ENDPOINT ($NOVA_ENDPOINT); nothing to start"
else
  if stack_running && [ "$(cat "$STATE/mode")" = "$AUTH_MODE" ]; then
    log "reusing the $AUTH_MODE stack already running in $STATE (left running afterwards)"
  else
    STARTED_HERE=1
    if ! "$HARNESS_DIR/start.sh"; then
      echo "REAL NOVA COULD NOT BE SET UP: the integration suites did not run (see the log tail above)." >&2
      exit 1
    fi
  fi
  # shellcheck disable=SC1091
  source "$STATE/env"
  if [ "$REALNOVA_AUTH" = keystone ]; then
    NOVA_TOKEN=$("$HARNESS_DIR/token.sh" admin) && NOVA_MEMBER_TOKEN=$("$HARNESS_DIR/token.sh" member) ||
      { echo "REAL NOVA: Keystone did not issue the test tokens" >&2; exit 1; }
    export NOVA_TOKEN NOVA_MEMBER_TOKEN
  fi
fi
SETUP_NS=$(($(now) - t))

t=$(now)
rc=0
npx vitest run --config vitest.integration.config.ts "$@" || rc=$?
SUITE_NS=$(($(now) - t))
exit $rc
