#!/bin/bash
# Print a fresh Keystone token of the real-Nova stack in Keystone mode (REALNOVA_KEYSTONE=real).
#
#   token.sh member   ci-bot's project-scoped token (the credentials of $STATE/env)
#   token.sh admin    the cloud admin's token, project admin ($STATE/env-admin)
#
# The token is the only thing written to stdout; nothing is logged. Exit 1 when Keystone refuses.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"

case "${1:-}" in
  member) envfile=$STATE/env ;;
  admin) envfile=$STATE/env-admin ;;
  *) echo "usage: token.sh member|admin" >&2; exit 2 ;;
esac
[ -f "$envfile" ] || { echo "token.sh: $envfile is missing (is the Keystone stack started?)" >&2; exit 1; }
# shellcheck disable=SC1090
source "$envfile"
[ "${REALNOVA_AUTH:-}" = keystone ] || { echo "token.sh: the stack in $STATE runs without Keystone" >&2; exit 1; }

"$PY" -c '
import json, os, sys, urllib.request
body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
    "name": os.environ["OS_USERNAME"], "domain": {"name": "Default"}, "password": os.environ["OS_PASSWORD"]}}},
    "scope": {"project": {"name": os.environ["OS_PROJECT_NAME"], "domain": {"name": "Default"}}}}}
req = urllib.request.Request(os.environ["OS_AUTH_URL"] + "/auth/tokens", data=json.dumps(body).encode(),
                             headers={"Content-Type": "application/json"}, method="POST")
with urllib.request.urlopen(req, timeout=30) as res:
    print(res.headers["X-Subject-Token"])
'
