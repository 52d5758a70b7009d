# Shared settings and helpers of the real-Nova harness. Sourced by start.sh, stop.sh and run-tests.sh.
#
# Every path the harness writes is under $STATE (default <repo>/.real-nova, override REALNOVA_STATE).
# Every service listens on 127.0.0.1; MariaDB on a Unix socket only.

HARNESS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REPO_DIR=$(cd "$HARNESS_DIR/../.." && pwd)
STATE=${REALNOVA_STATE:-$REPO_DIR/.real-nova}
LOGS=$STATE/logs
PIDS=$STATE/pids

# Debian's own interpreter: the image may put a pyenv/venv python3 first on PATH.
PY=/usr/bin/python3

# "stub" (default): noauth2 everywhere, a stub answers Nova's one Keystone call.
# "real": Debian's Keystone, keystonemiddleware in front of Nova, Placement and Glance.
case "${REALNOVA_KEYSTONE:-}" in
  real | 1 | true | yes) AUTH_MODE=keystone ;;
  *) AUTH_MODE=noauth ;;
esac

NOVA_PORT=${REALNOVA_NOVA_PORT:-8774}
PLACEMENT_PORT=${REALNOVA_PLACEMENT_PORT:-8778}
GLANCE_PORT=${REALNOVA_GLANCE_PORT:-9292}
NEUTRON_PORT=${REALNOVA_NEUTRON_PORT:-9696}
KEYSTONE_PORT=${REALNOVA_KEYSTONE_PORT:-5000}
RABBIT_PORT=${REALNOVA_RABBIT_PORT:-5672}
RABBIT_DIST_PORT=${REALNOVA_RABBIT_DIST_PORT:-25672}
EPMD_PORT=${REALNOVA_EPMD_PORT:-4369}

# The project whose servers the tests create (noauth2 mode; Keystone mode uses project "ci").
PROJECT=${REALNOVA_PROJECT:-nova-guard}
IMAGE_ID=155d900f-4e14-4e4c-a73d-069cbf4541e6

# Keystone mode: token lifetime in seconds. keystoneauth re-authenticates every service-to-service call
# when a token lives <= 120 s, which makes the whole stack slow; 3600 keeps a test run on one token.
KEYSTONE_TOKEN_EXPIRATION=${KEYSTONE_TOKEN_EXPIRATION:-3600}
# Test-stack credentials (loopback only). Written to $STATE/env* with mode 600, never printed.
KS_ADMIN_PASSWORD=${KS_ADMIN_PASSWORD:-realnova-admin}
KS_SERVICE_PASSWORD=${KS_SERVICE_PASSWORD:-realnova-service}
KS_CI_PASSWORD=${KS_CI_PASSWORD:-ci-bot-password}
KS_APPCRED_SECRET=${KS_APPCRED_SECRET:-realnova-appcred-secret}

# Services in start order; stop.sh stops them in reverse order.
SERVICES="epmd rabbitmq mariadb keystone placement glance-api neutron-stub nova-conductor nova-scheduler nova-compute nova-api"

export PATH=/usr/sbin:/usr/bin:/sbin:/bin:$PATH
unset PYTHONPATH PYTHONHOME VIRTUAL_ENV 2>/dev/null || true
export PYTHONDONTWRITEBYTECODE=1 # no __pycache__ in scripts/real-nova/py

T0=${T0:-$(date +%s%N)}
# log MESSAGE: timestamped progress line (seconds since the script started) on stderr.
log() {
  local d=$((($(date +%s%N) - T0) / 100000000))
  printf '[real-nova %4d.%ds] %s\n' $((d / 10)) $((d % 10)) "$*" >&2
}

# die MESSAGE [LOG...]: print a loud error and the tail of the named logs, then exit 1.
die() {
  local msg=$1 f
  shift
  {
    echo
    echo "================================================================"
    echo "REAL NOVA HARNESS FAILED: $msg"
    echo "================================================================"
    for f in "$@"; do
      [ -f "$f" ] || continue
      echo "----- tail -n 40 $f -----"
      tail -n 40 "$f"
    done
    echo "(all logs: $LOGS)"
  } >&2
  exit 1
}

# pid_of NAME: the recorded PID of a service, or nothing.
pid_of() { [ -f "$PIDS/$1.pid" ] && cat "$PIDS/$1.pid"; }

# is_alive PID: the process exists and is not a zombie (orphans are reaped by PID 1 only after a while).
is_alive() {
  local st
  st=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
  [ -n "$st" ] && [ "${st#Z}" = "$st" ]
}

# owns_group PID: PID is still the leader of its own process group, i.e. the process we started with setsid.
owns_group() { [ "$(ps -o pgid= -p "$1" 2>/dev/null | tr -d ' ')" = "$1" ]; }

# group_alive PGID: some non-zombie process is left in the group.
group_alive() { ps -o stat= -g "$1" 2>/dev/null | grep -qv '^Z'; }

# stack_running: every service of the recorded mode has a live PID and nova-api answers.
stack_running() {
  local name pid mode
  [ -f "$STATE/mode" ] && [ -f "$STATE/env" ] || return 1
  mode=$(cat "$STATE/mode")
  for name in $SERVICES; do
    if [ "$name" = keystone ] && [ "$mode" != keystone ]; then continue; fi
    pid=$(pid_of "$name") || return 1
    is_alive "$pid" && owns_group "$pid" || return 1
  done
  curl -sf -o /dev/null "http://127.0.0.1:$NOVA_PORT/"
}
