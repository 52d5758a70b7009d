#!/bin/bash
# Start a real OpenStack Nova on 127.0.0.1 for nova-guard's integration tests.
#
# Nova 26.2 (Zed) from Debian 12 packages, with the fake virt driver, and real MariaDB (Unix socket),
# RabbitMQ, Placement and Glance; a stub answers Nova's Neutron calls (servers boot with
# "networks": "none"). Default auth is noauth2 (X-Auth-Token "user:project", user "admin" is admin).
# REALNOVA_KEYSTONE=real runs Debian's Keystone instead, with keystonemiddleware in front of Nova,
# Placement and Glance.
#
#   services (127.0.0.1)  nova-api :8774, placement :8778, glance :9292, neutron stub :9696,
#                         keystone or its stub :5000, rabbitmq :5672 (+ epmd :4369, :25672)
#   state                 $REALNOVA_STATE (default <repo>/.real-nova): configs, databases, logs/,
#                         pids/, and env (source it: NOVA_ENDPOINT, NOVA_TOKEN, ...)
#
# Installs the Debian packages when they are missing (needs root and the Debian mirror), with a
# policy-rc.d that keeps their maintainer scripts from starting system-wide services.
#
# Idempotent: when the stack of the requested mode already runs and answers, it is left as it is
# (use --fresh to restart it with empty databases). Otherwise whatever an earlier run left is stopped
# and the stack starts from scratch. On any failure, start.sh stops what it started, prints the tail
# of the relevant logs and exits 1.
#
# Usage: scripts/real-nova/start.sh [--fresh]
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
source "$(dirname "$0")/lib/config.sh"

FRESH=0
for arg in "$@"; do
  case "$arg" in
    --fresh) FRESH=1 ;;
    -h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "start.sh: unknown argument $arg (try --help)" >&2; exit 2 ;;
  esac
done

# ---------------------------------------------------------------- reuse a running stack
if [ "$FRESH" = 0 ] && stack_running && [ "$(cat "$STATE/mode")" = "$AUTH_MODE" ]; then
  log "the $AUTH_MODE stack in $STATE is already running; nothing to do (--fresh restarts it)"
  exit 0
fi

# ---------------------------------------------------------------- failure handling
SETUP_JOBS=() # process groups of background setup commands (schema syncs, bootstrap)
STARTED=0 # set once the first service is started: from then on a failure stops the stack
on_exit() {
  local rc=$?
  [ "$rc" = 0 ] && return
  # Setup jobs still running (schema syncs) first, then the services.
  local pid
  for pid in "${SETUP_JOBS[@]}"; do
    if is_alive "$pid" && owns_group "$pid"; then kill -TERM -- "-$pid" 2>/dev/null || true; fi
  done
  for pid in "${SETUP_JOBS[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ "$STARTED" = 1 ]; then
    echo "start.sh failed (exit $rc): stopping the partly started stack" >&2
    "$HARNESS_DIR/stop.sh" >&2 || true
  fi
}
trap on_exit EXIT
trap 'exit 130' INT TERM # an interrupt runs the EXIT trap too
# CURRENT_LOG names the log of the step under way, shown when a command fails unexpectedly.
CURRENT_LOG=
trap 'die "command failed at start.sh line $LINENO: $BASH_COMMAND" ${CURRENT_LOG:+"$LOGS/$CURRENT_LOG"}' ERR

# ---------------------------------------------------------------- clean slate
if [ -d "$PIDS" ]; then "$HARNESS_DIR/stop.sh"; fi
case "$STATE" in
  / | "$REPO_DIR" | "$HOME" | "") die "refusing to use $STATE as the state folder" ;;
esac
# Only the sub-folders and files start.sh makes; the folder itself may hold other things.
rm -rf "$STATE"/{etc,mysql,rabbit,nova,glance,keystone,lock,logs,pids} "$STATE"/{env,env-appcred,env-admin,clouds.yaml,mode,mode.pending}
mkdir -p "$LOGS" "$PIDS"

for port in $NOVA_PORT $PLACEMENT_PORT $GLANCE_PORT $NEUTRON_PORT $KEYSTONE_PORT $RABBIT_PORT $RABBIT_DIST_PORT $EPMD_PORT; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    die "port $port on 127.0.0.1 is already in use (another stack? check: ss -ltnp 'sport = :$port')"
  fi
done

# ---------------------------------------------------------------- Debian packages
PKGS="python3-nova python3-placement python3-glance rabbitmq-server mariadb-server curl"
[ "$AUTH_MODE" = keystone ] && PKGS="$PKGS python3-keystone"
missing=
for p in $PKGS; do
  [ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)" = installed ] || missing="$missing $p"
done
if [ -n "$missing" ]; then
  [ "$(id -u)" = 0 ] || die "missing Debian packages:$missing. Run as root, or: apt-get install$missing"
  log "installing Debian packages:$missing (log: $LOGS/apt.log)"
  CURRENT_LOG=apt.log
  created_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    # Exit status 101 tells invoke-rc.d not to start services (mariadb, rabbitmq) at install time.
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d && created_policy=1
  fi
  apt_ok=1
  {
    apt-get update -q &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        -o DPkg::Lock::Timeout=300 $missing
  } >"$LOGS/apt.log" 2>&1 || apt_ok=0
  [ "$created_policy" = 1 ] && rm -f /usr/sbin/policy-rc.d
  [ "$apt_ok" = 1 ] || die "apt-get could not install:$missing" "$LOGS/apt.log"
  log "packages installed"
fi

# ---------------------------------------------------------------- configuration
CURRENT_LOG=
echo "$AUTH_MODE" >"$STATE/mode.pending"
write_nova_conf
write_placement_conf
write_glance_conf
[ "$AUTH_MODE" = keystone ] && write_keystone_conf
NOVA_CONF="--config-file $STATE/etc/nova/nova.conf"
KEYSTONE_CONF="--config-file $STATE/etc/keystone/keystone.conf"

# start NAME COMMAND...: run COMMAND in a new session (its PID is its process group id), with its
# output in logs/NAME.log and its PID in pids/NAME.pid.
start() {
  local name=$1
  shift
  setsid "$@" >"$LOGS/$name.log" 2>&1 </dev/null &
  echo $! >"$PIDS/$name.pid"
  STARTED=1
}

# setup_job NAME COMMAND...: run a one-off setup command in the background in its own process group
# (so a failure elsewhere can stop it with all its children), output in logs/NAME.log.
setup_job() {
  local name=$1
  shift
  setsid "$@" >"$LOGS/$name.log" 2>&1 </dev/null &
  SETUP_JOBS+=($!)
}

# wait_until NAME SECONDS TEST...: poll TEST every 0.2 s while service NAME is alive.
wait_until() {
  local name=$1 seconds=$2 i pid
  shift 2
  pid=$(pid_of "$name")
  for ((i = 0; i < seconds * 5; i++)); do
    "$@" && return 0
    is_alive "$pid" || die "$name exited during start-up" "$LOGS/$name.log"
    sleep 0.2
  done
  die "$name did not answer within $seconds s" "$LOGS/$name.log"
}
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
http_ok() { curl -s -o /dev/null --max-time 5 "$1"; }

# wait_job PID WHAT LOG...: wait for a background setup job; die with its logs if it failed.
wait_job() {
  local pid=$1 what=$2
  shift 2
  wait "$pid" || die "$what failed" "$@"
}

# ---------------------------------------------------------------- RabbitMQ and MariaDB
log "starting RabbitMQ and MariaDB"
mkdir -p "$STATE/rabbit/mnesia" "$STATE/rabbit/log" "$STATE/mysql/data"
od -An -tx1 -N16 /dev/urandom | tr -dc 0-9a-f | tr a-f A-F >"$STATE/rabbit/.erlang.cookie"
chmod 400 "$STATE/rabbit/.erlang.cookie"
echo '[].' >"$STATE/rabbit/enabled_plugins"
(
  export HOME=$STATE/rabbit ERL_EPMD_ADDRESS=127.0.0.1 ERL_EPMD_PORT=$EPMD_PORT
  export RABBITMQ_NODENAME=rabbit@localhost RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 \
    RABBITMQ_NODE_PORT=$RABBIT_PORT RABBITMQ_DIST_PORT=$RABBIT_DIST_PORT \
    RABBITMQ_MNESIA_BASE=$STATE/rabbit/mnesia RABBITMQ_LOG_BASE=$STATE/rabbit/log \
    RABBITMQ_ENABLED_PLUGINS_FILE=$STATE/rabbit/enabled_plugins \
    RABBITMQ_CONFIG_FILE=$STATE/rabbit/rabbitmq \
    RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
  start epmd epmd -address 127.0.0.1 -port "$EPMD_PORT"
  sleep 0.3
  start rabbitmq /usr/lib/rabbitmq/bin/rabbitmq-server
)
STARTED=1

mariadb-install-db --no-defaults --datadir="$STATE/mysql/data" --user=root \
  --auth-root-authentication-method=normal --skip-test-db >"$LOGS/mariadb-install.log" 2>&1 ||
  die "mariadb-install-db failed" "$LOGS/mariadb-install.log"
# No TCP listener at all; durability settings traded for speed (a test stack's data is disposable).
start mariadb /usr/sbin/mariadbd --no-defaults --datadir="$STATE/mysql/data" \
  --socket="$STATE/mysql/mysqld.sock" --pid-file="$STATE/mysql/mysqld.pid" --skip-networking \
  --user=root --skip-name-resolve --innodb-buffer-pool-size=128M --innodb-log-file-size=48M \
  --innodb-flush-log-at-trx-commit=0 --innodb-doublewrite=0 --skip-log-bin --max-connections=1000 \
  --character-set-server=utf8mb4
sql() { mariadb --no-defaults --socket="$STATE/mysql/mysqld.sock" -uroot -e "$1"; }
wait_until mariadb 30 sql 'SELECT 1' >/dev/null 2>&1
DATABASES="nova_api nova_cell0 nova_cell1 placement glance"
[ "$AUTH_MODE" = keystone ] && DATABASES="$DATABASES keystone"
for d in $DATABASES; do sql "CREATE DATABASE $d"; done

# ---------------------------------------------------------------- schemas, in parallel
log "creating the database schemas"
q() { printf '%q ' "$@"; } # shell-quote words for a bash -c script
# API database, cell mappings and cell0 in one process; cell1 in parallel (py/nova_db_setup.py).
setup_job nova-db-api "$PY" "$HARNESS_DIR/py/nova_db_setup.py" api "$STATE/etc/nova/nova.conf" "$(db nova_cell0)"
JOB_NOVA_API=$!
setup_job nova-db-cell1 "$PY" "$HARNESS_DIR/py/nova_db_setup.py" cell "$STATE/etc/nova/nova.conf"
JOB_NOVA_CELL=$!
setup_job placement-db-sync "$PY" "$HARNESS_DIR/py/run.py" placement.cmd.manage placement-manage \
  --config-file "$STATE/etc/placement/placement.conf" db sync
JOB_PLACEMENT=$!
setup_job glance-db-sync "$PY" "$HARNESS_DIR/py/run.py" glance.cmd.manage glance-manage \
  --config-file "$STATE/etc/glance/glance-api.conf" db_sync
JOB_GLANCE=$!
if [ "$AUTH_MODE" = keystone ]; then
  KEYSTONE_MANAGE=$(q "$PY" "$HARNESS_DIR/py/run.py" keystone.cmd.manage keystone-manage $KEYSTONE_CONF)
  # The key repositories need no database: they are made while the schema is created.
  setup_job keystone-db-sync bash -c "set -e
    $KEYSTONE_MANAGE fernet_setup --keystone-user root --keystone-group root & fernet=\$!
    $KEYSTONE_MANAGE credential_setup --keystone-user root --keystone-group root & credential=\$!
    $KEYSTONE_MANAGE db_sync
    wait \$fernet
    wait \$credential"
  JOB_KEYSTONE=$!
fi

# ---------------------------------------------------------------- Keystone (Keystone mode)
if [ "$AUTH_MODE" = keystone ]; then
  wait_job $JOB_KEYSTONE "Keystone's schema and key setup" "$LOGS/keystone-db-sync.log"
  log "starting Keystone"
  # bootstrap: admin user/project/role, roles member and reader, region, identity endpoints.
  # The password goes through the environment, not the command line (ps shows command lines).
  OS_BOOTSTRAP_PASSWORD=$KS_ADMIN_PASSWORD setup_job keystone-bootstrap "$PY" "$HARNESS_DIR/py/run.py" \
    keystone.cmd.manage keystone-manage $KEYSTONE_CONF bootstrap --bootstrap-username admin \
    --bootstrap-project-name admin --bootstrap-role-name admin --bootstrap-service-name keystone \
    --bootstrap-region-id RegionOne --bootstrap-admin-url "http://127.0.0.1:$KEYSTONE_PORT/v3/" \
    --bootstrap-internal-url "http://127.0.0.1:$KEYSTONE_PORT/v3/" \
    --bootstrap-public-url "http://127.0.0.1:$KEYSTONE_PORT/v3/"
  JOB_BOOTSTRAP=$!
  OS_KEYSTONE_CONFIG_DIR=$STATE/etc/keystone start keystone "$PY" "$HARNESS_DIR/py/wsgi_serve.py" keystone "$KEYSTONE_PORT"
fi

# ---------------------------------------------------------------- Placement, Glance, stubs
wait_job $JOB_PLACEMENT "placement db sync" "$LOGS/placement-db-sync.log"
wait_job $JOB_GLANCE "glance db sync" "$LOGS/glance-db-sync.log"
log "starting Placement, Glance and the Neutron stub"
OS_PLACEMENT_CONFIG_DIR=$STATE/etc/placement start placement "$PY" "$HARNESS_DIR/py/wsgi_serve.py" placement "$PLACEMENT_PORT"
start glance-api "$PY" "$HARNESS_DIR/py/run.py" glance.cmd.api glance-api --config-file "$STATE/etc/glance/glance-api.conf"
stub_keystone_port=$KEYSTONE_PORT
[ "$AUTH_MODE" = keystone ] && stub_keystone_port=0
start neutron-stub "$PY" "$HARNESS_DIR/py/stubs.py" "$NEUTRON_PORT" "$stub_keystone_port"

if [ "$AUTH_MODE" = keystone ]; then
  wait_job $JOB_BOOTSTRAP "keystone-manage bootstrap" "$LOGS/keystone-bootstrap.log"
  wait_until keystone 60 http_ok "http://127.0.0.1:$KEYSTONE_PORT/v3"
  CURRENT_LOG=keystone-setup.log
  KS_IDS=$(KS_URL=http://127.0.0.1:$KEYSTONE_PORT KS_ADMIN_PASSWORD=$KS_ADMIN_PASSWORD \
    KS_SERVICE_PASSWORD=$KS_SERVICE_PASSWORD KS_CI_PASSWORD=$KS_CI_PASSWORD KS_APPCRED_SECRET=$KS_APPCRED_SECRET \
    COMPUTE_URL=http://127.0.0.1:$NOVA_PORT/v2.1 PLACEMENT_URL=http://127.0.0.1:$PLACEMENT_PORT \
    IMAGE_URL=http://127.0.0.1:$GLANCE_PORT NETWORK_URL=http://127.0.0.1:$NEUTRON_PORT \
    "$PY" "$HARNESS_DIR/py/keystone_setup.py" 2>"$LOGS/keystone-setup.log") ||
    die "Keystone registration failed" "$LOGS/keystone-setup.log" "$LOGS/keystone.log"
  eval "$KS_IDS" # KS_ADMIN_PROJECT_ID KS_CI_PROJECT_ID KS_APPCRED_ID
  CURRENT_LOG=
  log "Keystone: catalog, service users, project ci, user ci-bot and its application credential"
fi

# ---------------------------------------------------------------- Nova
wait_job $JOB_NOVA_API "Nova's API database and cell0" "$LOGS/nova-db-api.log"
wait_job $JOB_NOVA_CELL "Nova's cell1 database" "$LOGS/nova-db-cell1.log"
wait_until rabbitmq 60 port_open "$RABBIT_PORT"
log "starting Nova (conductor, scheduler, compute, api)"
start nova-conductor "$PY" "$HARNESS_DIR/py/run.py" nova.cmd.conductor nova-conductor $NOVA_CONF
start nova-scheduler "$PY" "$HARNESS_DIR/py/run.py" nova.cmd.scheduler nova-scheduler $NOVA_CONF
start nova-compute "$PY" "$HARNESS_DIR/py/run.py" nova.cmd.compute nova-compute \
  --config-file "$STATE/etc/nova/nova-compute.conf"
PYTHONPATH=$HARNESS_DIR/py start nova-api "$PY" "$HARNESS_DIR/py/run.py" nova.cmd.api_os_compute \
  nova-api-os-compute $NOVA_CONF

wait_until placement 60 http_ok "http://127.0.0.1:$PLACEMENT_PORT/"
wait_until glance-api 60 http_ok "http://127.0.0.1:$GLANCE_PORT/versions"
wait_until nova-api 120 http_ok "http://127.0.0.1:$NOVA_PORT/"
log "nova-api answers; seeding image and flavors, waiting for the compute host"

# ---------------------------------------------------------------- image, flavors, readiness
seed_env=(NOVA_URL=http://127.0.0.1:$NOVA_PORT/v2.1 GLANCE_URL=http://127.0.0.1:$GLANCE_PORT IMAGE_ID=$IMAGE_ID
  "DISCOVER_HOSTS=$PY $HARNESS_DIR/py/run.py nova.cmd.manage nova-manage $NOVA_CONF cell_v2 discover_hosts")
if [ "$AUTH_MODE" = keystone ]; then
  seed_env+=(KS_URL=http://127.0.0.1:$KEYSTONE_PORT KS_ADMIN_PASSWORD=$KS_ADMIN_PASSWORD)
else
  seed_env+=(ADMIN_TOKEN=admin:$PROJECT-readiness)
fi
env "${seed_env[@]}" "$PY" "$HARNESS_DIR/py/seed.py" 2>"$LOGS/seed.log" ||
  die "the stack started but is not usable" "$LOGS/seed.log" "$LOGS/nova-compute.log" "$LOGS/nova-conductor.log" \
    "$LOGS/nova-scheduler.log" "$LOGS/nova-api.log"
sed 's/^/    /' "$LOGS/seed.log" >&2

# ---------------------------------------------------------------- env files
umask 077
common_env="export REALNOVA_STATE=$STATE
export NOVA_ENDPOINT=http://127.0.0.1:$NOVA_PORT/v2.1
export NOVA_IMAGE_ID=$IMAGE_ID
export NOVA_FLAVOR_ID=1
export NOVA_FLAVOR_ID_2VCPU=2
export NOVA_FLAVOR_ID_4VCPU=3
export NOVA_FLAVOR_ID_NO_VALID_HOST=no-valid-host
export PLACEMENT_ENDPOINT=http://127.0.0.1:$PLACEMENT_PORT"
if [ "$AUTH_MODE" = noauth ]; then
  cat >"$STATE/env" <<EOF
# real-Nova stack, noauth2: X-Auth-Token is "user:project"; user "admin" is an admin.
export REALNOVA_AUTH=noauth
$common_env
export NOVA_PROJECT=$PROJECT
export NOVA_TOKEN=admin:$PROJECT
export NOVA_MEMBER_TOKEN=ci-bot:$PROJECT
EOF
else
  ks_common="export REALNOVA_AUTH=keystone
$common_env
# Keystone tokens expire (${KEYSTONE_TOKEN_EXPIRATION} s): get one with scripts/real-nova/token.sh
unset NOVA_TOKEN NOVA_MEMBER_TOKEN
export NOVA_PROJECT=$KS_CI_PROJECT_ID
export NOVA_ADMIN_PROJECT=$KS_ADMIN_PROJECT_ID
export KEYSTONE_TOKEN_EXPIRATION=$KEYSTONE_TOKEN_EXPIRATION
export OS_CLIENT_CONFIG_FILE=$STATE/clouds.yaml
export OS_AUTH_URL=http://127.0.0.1:$KEYSTONE_PORT/v3
export OS_IDENTITY_API_VERSION=3
export OS_REGION_NAME=RegionOne
export OS_INTERFACE=public"
  password_env() { # user password project
    printf '%s\nexport OS_AUTH_TYPE=password\nexport OS_USERNAME=%s\nexport OS_PASSWORD=%s\n' "$ks_common" "$1" "$2"
    printf 'export OS_PROJECT_NAME=%s\nexport OS_USER_DOMAIN_NAME=Default\nexport OS_PROJECT_DOMAIN_NAME=Default\n' "$3"
    printf 'unset OS_APPLICATION_CREDENTIAL_ID OS_APPLICATION_CREDENTIAL_SECRET\n'
  }
  password_env ci-bot "$KS_CI_PASSWORD" ci >"$STATE/env"
  password_env admin "$KS_ADMIN_PASSWORD" admin >"$STATE/env-admin"
  cat >"$STATE/env-appcred" <<EOF
$ks_common
export OS_AUTH_TYPE=v3applicationcredential
export OS_APPLICATION_CREDENTIAL_ID=$KS_APPCRED_ID
export OS_APPLICATION_CREDENTIAL_SECRET=$KS_APPCRED_SECRET
# An application credential carries its own project scope; a second scope would conflict.
unset OS_USERNAME OS_PASSWORD OS_PROJECT_NAME OS_PROJECT_ID OS_USER_DOMAIN_NAME OS_PROJECT_DOMAIN_NAME
EOF
  cat >"$STATE/clouds.yaml" <<EOF
# real-Nova stack with Keystone (token lifetime ${KEYSTONE_TOKEN_EXPIRATION} s).
clouds:
  realnova: # ci-bot, member of project ci, password
    auth_type: password
    auth: {auth_url: "http://127.0.0.1:$KEYSTONE_PORT/v3", username: ci-bot, password: "$KS_CI_PASSWORD",
           project_name: ci, user_domain_name: Default, project_domain_name: Default}
    region_name: RegionOne
    interface: public
    identity_api_version: 3
  realnova-appcred: # ci-bot's application credential (scope: project ci)
    auth_type: v3applicationcredential
    auth: {auth_url: "http://127.0.0.1:$KEYSTONE_PORT/v3", application_credential_id: "$KS_APPCRED_ID",
           application_credential_secret: "$KS_APPCRED_SECRET"}
    region_name: RegionOne
    interface: public
    identity_api_version: 3
  realnova-admin: # the cloud admin, project admin
    auth_type: password
    auth: {auth_url: "http://127.0.0.1:$KEYSTONE_PORT/v3", username: admin, password: "$KS_ADMIN_PASSWORD",
           project_name: admin, user_domain_name: Default, project_domain_name: Default}
    region_name: RegionOne
    interface: public
    identity_api_version: 3
EOF
fi
mv "$STATE/mode.pending" "$STATE/mode"

log "ready: $AUTH_MODE stack at http://127.0.0.1:$NOVA_PORT/v2.1 (Nova $(dpkg-query -W -f='${Version}' python3-nova))"
log "environment: . $STATE/env     stop: $HARNESS_DIR/stop.sh"
