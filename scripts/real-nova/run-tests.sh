#!/bin/bash
# npm run test:real-nova: the integration and fidelity suites (test/integration/) against a real Nova.
#
# With NOVA_ENDPOINT and NOVA_TOKEN already set, the suites run against that stack and nothing is
# started or stopped. Otherwise an already running harness stack is reused (and left running), or
# start.sh starts one and this script stops it again on exit, whatever happens.
# Never skips: when the stack cannot be set up, it exits 1 with the harness's log tail (start.sh prints
# it). Extra arguments go to vitest, e.g. `npm run test:real-nova -- test/integration/quota.test.ts`.
#
# After the suites, the demo (examples/demo.ts: 8 workers on 2 hosts, 3 jobs each, 2-vCPU servers)
# runs against the same Nova in a project whose core quota is lowered to 10 (admin PUT os-quota-sets,
# restored with DELETE os-quota-sets whatever happens); a failed demo fails the run. Under noauth2 the
# demo gets a project of its own (<project>-demo-<time>); under Keystone it uses NOVA_PROJECT with the
# member token. A run with vitest arguments (a focused run) skips the demo unless REALNOVA_DEMO=1;
# REALNOVA_DEMO=0 skips it always.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
cd "$REPO_DIR"

now() { date +%s%N; }
secs() { awk -v ns="$1" 'BEGIN { printf "%.1f", ns / 1e9 }'; }
SETUP_NS=0 SUITE_NS=0 DEMO_NS=0 STOP_NS=0 STARTED_HERE=0
DEMO_QUOTA_PROJECT= DEMO_ADMIN_TOKEN=

# nova_quota METHOD PROJECT TOKEN [BODY]: an admin os-quota-sets call; fails on an HTTP error.
nova_quota() {
  curl -fsS -o /dev/null --max-time 60 -X "$1" "${NOVA_ENDPOINT%/}/os-quota-sets/$2" \
    -H "X-Auth-Token: $3" -H 'Content-Type: application/json' ${4:+-d "$4"}
}

# restore_demo_quota: back to the default quota of the demo's project (when it was lowered).
restore_demo_quota() {
  [ -n "$DEMO_QUOTA_PROJECT" ] || return 0
  local project=$DEMO_QUOTA_PROJECT
  DEMO_QUOTA_PROJECT=
  nova_quota DELETE "$project" "$DEMO_ADMIN_TOKEN" || { echo "REAL NOVA DEMO: could not restore the quota of project $project" >&2; return 1; }
  log "demo: quota of project $project restored"
}

# run_demo: the demo against the real Nova with a 10-core quota; its exit status.
run_demo() {
  local project worker_token rc=0 noauth='^([^:[:space:]]+):([^:[:space:]]+)$'
  if [ -z "${NOVA_IMAGE_ID:-}" ] || [ -z "${NOVA_FLAVOR_ID_2VCPU:-}" ]; then
    echo "REAL NOVA DEMO: NOVA_IMAGE_ID and NOVA_FLAVOR_ID_2VCPU must name an image and a 2-vCPU flavor" >&2
    return 1
  fi
  if [ "${REALNOVA_AUTH:-noauth}" != keystone ] && [[ $NOVA_TOKEN =~ $noauth ]]; then
    project=${NOVA_PROJECT:-${BASH_REMATCH[2]}}-demo-$(date +%s)
    DEMO_ADMIN_TOKEN=${BASH_REMATCH[1]}:$project
    [[ ${NOVA_MEMBER_TOKEN:-} =~ $noauth ]] && worker_token=${BASH_REMATCH[1]}:$project || worker_token=ci-bot:$project
  else
    project=${NOVA_PROJECT:?REAL NOVA DEMO: NOVA_PROJECT must name the project of NOVA_MEMBER_TOKEN}
    DEMO_ADMIN_TOKEN=$NOVA_TOKEN
    worker_token=${NOVA_MEMBER_TOKEN:-$NOVA_TOKEN}
  fi
  DEMO_QUOTA_PROJECT=$project
  if ! nova_quota PUT "$project" "$DEMO_ADMIN_TOKEN" '{"quota_set": {"cores": 10}}'; then
    echo "REAL NOVA DEMO: could not lower the core quota of project $project to 10" >&2
    DEMO_QUOTA_PROJECT=
    return 1
  fi
  log "demo: 8 workers x 3 jobs of 2-vCPU servers on 2 hosts, project $project with a 10-core quota"
  npm run demo --silent -- --endpoint "$NOVA_ENDPOINT" --token "$worker_token" --image "$NOVA_IMAGE_ID" \
    --flavor "$NOVA_FLAVOR_ID_2VCPU" --quiet || rc=$?
  restore_demo_quota || rc=1
  return $rc
}

report() {
  local rc=$? t
  restore_demo_quota || rc=1
  if [ "$STARTED_HERE" = 1 ]; then
    t=$(now)
    "$HARNESS_DIR/stop.sh" || rc=1
    STOP_NS=$(($(now) - t))
  fi
  echo "real-nova timings: setup $(secs $SETUP_NS) s, suite $(secs $SUITE_NS) s, demo $(secs $DEMO_NS) s, stop $(secs $STOP_NS) s (exit $rc)" >&2
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
log "suite: $(secs $SUITE_NS) s (exit $rc)"

if [ "${REALNOVA_DEMO:-}" = 0 ] || { [ $# -gt 0 ] && [ "${REALNOVA_DEMO:-}" != 1 ]; }; then
  log "demo not run (vitest arguments given or REALNOVA_DEMO=0; REALNOVA_DEMO=1 runs it)"
else
  t=$(now)
  demo_rc=0
  run_demo || demo_rc=$?
  DEMO_NS=$(($(now) - t))
  log "demo: $(secs $DEMO_NS) s (exit $demo_rc)"
  if [ "$demo_rc" != 0 ]; then
    echo "REAL NOVA DEMO FAILED (exit $demo_rc): see its summary above" >&2
    [ "$rc" != 0 ] || rc=$demo_rc
  fi
fi
exit $rc
