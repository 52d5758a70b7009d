#!/usr/bin/env bash
# A shell CI worker with the quota guard, as autopkgtest's ssh-setup/nova script does it with the
# nova client (`nova boot --poll`, run the test, `nova delete`, then `nova show` until it is gone):
#
#   1. create a server through the guard and wait for ACTIVE:
#        nova-guard server create NAME --flavor F --image I --nic none --wait -f value -c id
#      (the guard waits for quota headroom, backs off on quota 403s, tags the server and finds it
#      again when the POST's answer is lost; with a ledger it takes turns with the other workers);
#   2. "run" the test (here: sleep);
#   3. delete the server and wait until Nova has deleted it:
#        nova-guard server delete --wait ID
#      (with a ledger it tells the other workers' waiting creates that the quota is free, at Nova's 404);
#
# The server is deleted on every way out (an EXIT trap), also when the test fails.
#
# Connection as the openstack command: OS_CLOUD, or OS_AUTH_URL and the other OS_* variables, or
# OS_ENDPOINT with OS_TOKEN (e.g. the lines `nova-guard fake-nova` prints). Settings (environment):
#   NOVA_GUARD         the command (default: nova-guard; e.g. "node dist/cli/main.js" in a clone)
#   NOVA_GUARD_LEDGER  quota ledger shared with the other workers (e.g. redis://127.0.0.1:6379)
#   FLAVOR, IMAGE      default m1.tiny and cirros-0.6.2-x86_64-disk (FakeNova's), by name or id
#   RUN_SECONDS        how long the "test" runs (default 1)
#   POLL_INTERVAL      time between polls of the delete (default 2s)
#
# Usage: examples/shell-worker.sh [SERVER_NAME]
set -euo pipefail

name=${1:-shell-worker-$$}
flavor=${FLAVOR:-m1.tiny}
image=${IMAGE:-cirros-0.6.2-x86_64-disk}
run_seconds=${RUN_SECONDS:-1}
poll_interval=${POLL_INTERVAL:-2s}
read -r -a ng <<<"${NOVA_GUARD:-nova-guard}"

ledger=()
if [ -n "${NOVA_GUARD_LEDGER:-}" ]; then ledger=(--ledger "$NOVA_GUARD_LEDGER"); fi

# 1. Create (through the guard) and wait for ACTIVE; only the id on stdout.
id=$("${ng[@]}" server create "$name" --flavor "$flavor" --image "$image" --nic none --wait ${ledger[@]+"${ledger[@]}"} -f value -c id)
echo "$name: created $id"

cleanup() {
  local rc=$?
  # 3. Delete with wait (Nova's 404, or SOFT_DELETED): the quota is free when this returns.
  if ! "${ng[@]}" server delete --wait --interval "$poll_interval" ${ledger[@]+"${ledger[@]}"} "$id" >/dev/null; then
    echo "$name: could not delete $id: delete it by hand (nova-guard server delete --wait $id)" >&2
    exit 1
  fi
  echo "$name: deleted $id"
  exit "$rc"
}
trap cleanup EXIT

# 2. "Run" the test on the server.
status=$("${ng[@]}" server show "$id" -f value -c status)
echo "$name: $id is $status, running the test for ${run_seconds}s"
sleep "$run_seconds"
