#!/bin/bash
# `npm run bench:real-nova`: nova-guard beside openstackclient and openstacksdk on the real-Nova harness.
#
# Installs Debian's python3-openstackclient and python3-openstacksdk when missing (root), starts the
# harness (scripts/real-nova/start.sh, noauth2) unless one is running, builds, runs
# build/bench/real-nova/run.js with the arguments given, and stops the harness if it started it.
# Needs redis-server (Debian's) for the nova-guard-redis churn policy.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
cd "$REPO"

missing=()
for pkg in python3-openstackclient python3-openstacksdk; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "bench:real-nova: installing ${missing[*]}" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2 ||
    { apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2; }
fi

STATE=${REALNOVA_STATE:-$REPO/.real-nova}
started=0
if ! { [ -f "$STATE/mode" ] && [ "$(cat "$STATE/mode")" = noauth ] && curl -sf -o /dev/null "http://127.0.0.1:${REALNOVA_NOVA_PORT:-8774}/"; }; then
  unset REALNOVA_KEYSTONE
  scripts/real-nova/start.sh >&2
  started=1
fi
stop() { if [ "$started" = 1 ]; then scripts/real-nova/stop.sh >&2 || true; fi; }
trap stop EXIT

npm run build --silent
npm run build:examples --silent
node build/bench/real-nova/run.js "$@"
