# Configuration files of the real-Nova stack, written under $STATE/etc. Sourced by start.sh after common.sh.
#
# Debian's service packages (nova-common, glance-common, keystone) are not installed, so the paste
# pipelines are written here too, reduced to the routes the stack serves.

# db NAME: SQLAlchemy URL of a MariaDB database over the harness's Unix socket.
db() { echo "mysql+pymysql://root@localhost/$1?unix_socket=$STATE/mysql/mysqld.sock&charset=utf8"; }

# policy_defaults: the legacy (pre-Zed) policy defaults, so that noauth2's "admin" user is an admin
# and any other user is a member of its project.
policy_defaults() {
  cat <<EOF

[oslo_policy]
enforce_scope = false
enforce_new_defaults = false
EOF
}

# authtoken USER: keystonemiddleware settings of a service (Keystone mode). No memcached: the
# middleware keeps its in-process token cache. The X-Service-Token Nova sends must carry role
# "service"; with it an expired user token is still accepted (a build that outlives the token).
authtoken() {
  cat <<EOF

[keystone_authtoken]
www_authenticate_uri = http://127.0.0.1:$KEYSTONE_PORT/
auth_url = http://127.0.0.1:$KEYSTONE_PORT/
auth_type = password
username = $1
password = $KS_SERVICE_PASSWORD
project_name = service
user_domain_name = Default
project_domain_name = Default
region_name = RegionOne
interface = internal
service_token_roles = service
service_token_roles_required = true
EOF
}

# service_user_auth SECTION: password auth as the nova service user, for Nova's calls to Placement and
# for the service token it sends along with the user's (Keystone mode).
service_user_auth() {
  cat <<EOF

[$1]
auth_type = password
auth_url = http://127.0.0.1:$KEYSTONE_PORT/v3
username = nova
password = $KS_SERVICE_PASSWORD
project_name = service
user_domain_name = Default
project_domain_name = Default
region_name = RegionOne
EOF
}

write_nova_conf() {
  local auth_strategy=noauth2
  [ "$AUTH_MODE" = keystone ] && auth_strategy=keystone
  mkdir -p "$STATE/etc/nova" "$STATE/nova/instances" "$STATE/lock"
  {
    cat <<EOF
[DEFAULT]
host = fake-compute-1
my_ip = 127.0.0.1
state_path = $STATE/nova
instances_path = $STATE/nova/instances
transport_url = rabbit://guest:guest@127.0.0.1:$RABBIT_PORT/
# The fake virt driver: servers "boot" in well under a second, no hypervisor needed.
compute_driver = fake.FakeDriver
enabled_apis = osapi_compute
osapi_compute_listen = 127.0.0.1
osapi_compute_listen_port = $NOVA_PORT
osapi_compute_workers = 1
use_rootwrap_daemon = false
heal_instance_info_cache_interval = -1
update_resources_interval = 0
# Do not set [notifications] notify_on_state_change to an empty value: no service starts then.

[wsgi]
api_paste_config = $STATE/etc/nova/api-paste.ini

[api]
auth_strategy = $auth_strategy

[oslo_concurrency]
lock_path = $STATE/lock

[api_database]
connection = $(db nova_api)

[database]
connection = $(db nova_cell1)

[conductor]
workers = 1

[scheduler]
workers = 1
# New compute hosts are mapped to the cell within 5 s (start.sh also runs discover_hosts).
discover_hosts_in_cells_interval = 5

[glance]
api_servers = http://127.0.0.1:$GLANCE_PORT

[neutron]
auth_type = none
endpoint_override = http://127.0.0.1:$NEUTRON_PORT

[keystone]
# os-quota-sets checks that the project exists. Needed with a real Keystone too: Nova drops the
# identity service from the request context's catalog.
endpoint_override = http://127.0.0.1:$KEYSTONE_PORT/v3/

[oslo_messaging_notifications]
driver = noop
EOF
    if [ "$AUTH_MODE" = keystone ]; then
      service_user_auth placement
      echo "valid_interfaces = internal,public"
      echo "endpoint_override = http://127.0.0.1:$PLACEMENT_PORT"
      authtoken nova
      service_user_auth service_user
      echo "send_service_user_token = true"
    else
      cat <<EOF

[placement]
# Placement runs noauth2 as well; "admin" is its admin token.
auth_type = admin_token
token = admin
endpoint_override = http://127.0.0.1:$PLACEMENT_PORT
EOF
    fi
    policy_defaults
  } >"$STATE/etc/nova/nova.conf"

  # nova-compute must not know the databases: it talks to them through nova-conductor only.
  awk '/^\[/ { skip = ($0 == "[database]" || $0 == "[api_database]") } !skip' \
    "$STATE/etc/nova/nova.conf" >"$STATE/etc/nova/nova-compute.conf"

  # The compute API pipelines of Nova's api-paste.ini, without the legacy /v2 routes and the metadata
  # API. Under noauth2, noauth_token (py/noauth_token.py) gives the context the caller's token so that
  # Nova's own calls to Glance and Neutron authenticate.
  cat >"$STATE/etc/nova/api-paste.ini" <<'EOF'
[composite:osapi_compute]
use = call:nova.api.openstack.urlmap:urlmap_factory
/: oscomputeversions
/v2.1: oscomputeversion_v2
/v2.1/+: openstack_compute_api_v21

[composite:openstack_compute_api_v21]
use = call:nova.api.auth:pipeline_factory_v21
keystone = cors http_proxy_to_wsgi compute_req_id faultwrap request_log sizelimit authtoken keystonecontext osapi_compute_app_v21
noauth2 = cors http_proxy_to_wsgi compute_req_id faultwrap request_log sizelimit noauth2 noauth_token osapi_compute_app_v21

[pipeline:oscomputeversions]
pipeline = cors faultwrap request_log http_proxy_to_wsgi oscomputeversionapp

[pipeline:oscomputeversion_v2]
pipeline = cors compute_req_id faultwrap request_log http_proxy_to_wsgi oscomputeversionapp_v2

[app:oscomputeversionapp]
paste.app_factory = nova.api.openstack.compute.versions:Versions.factory

[app:oscomputeversionapp_v2]
paste.app_factory = nova.api.openstack.compute.versions:VersionsV2.factory

[app:osapi_compute_app_v21]
paste.app_factory = nova.api.openstack.compute:APIRouterV21.factory

[filter:request_log]
paste.filter_factory = nova.api.openstack.requestlog:RequestLog.factory

[filter:compute_req_id]
paste.filter_factory = nova.api.compute_req_id:ComputeReqIdMiddleware.factory

[filter:faultwrap]
paste.filter_factory = nova.api.openstack:FaultWrapper.factory

[filter:noauth2]
paste.filter_factory = nova.api.openstack.auth:NoAuthMiddleware.factory

[filter:noauth_token]
paste.filter_factory = noauth_token:filter_factory

[filter:sizelimit]
paste.filter_factory = oslo_middleware:RequestBodySizeLimiter.factory

[filter:http_proxy_to_wsgi]
paste.filter_factory = oslo_middleware.http_proxy_to_wsgi:HTTPProxyToWSGI.factory

[filter:cors]
paste.filter_factory = oslo_middleware.cors:filter_factory
oslo_config_project = nova

[filter:keystonecontext]
paste.filter_factory = nova.api.auth:NovaKeystoneContext.factory

[filter:authtoken]
paste.filter_factory = keystonemiddleware.auth_token:filter_factory
EOF
}

write_placement_conf() {
  local auth_strategy=noauth2
  [ "$AUTH_MODE" = keystone ] && auth_strategy=keystone
  mkdir -p "$STATE/etc/placement"
  {
    printf '[api]\nauth_strategy = %s\n\n[placement_database]\nconnection = %s\n' "$auth_strategy" "$(db placement)"
    [ "$AUTH_MODE" = keystone ] && authtoken placement
    policy_defaults
  } >"$STATE/etc/placement/placement.conf"
}

write_glance_conf() {
  local flavor=
  [ "$AUTH_MODE" = keystone ] && flavor=keystone
  mkdir -p "$STATE/etc/glance" "$STATE/glance/images" "$STATE/glance/staging" "$STATE/glance/tasks"
  {
    cat <<EOF
[DEFAULT]
bind_host = 127.0.0.1
bind_port = $GLANCE_PORT
workers = 1
enabled_backends = fs:file

[database]
connection = $(db glance)

[paste_deploy]
config_file = $STATE/etc/glance/glance-api-paste.ini
flavor = $flavor

[glance_store]
default_backend = fs

[fs]
filesystem_store_datadir = $STATE/glance/images

[os_glance_staging_store]
filesystem_store_datadir = $STATE/glance/staging

[os_glance_tasks_store]
filesystem_store_datadir = $STATE/glance/tasks
EOF
    [ "$AUTH_MODE" = keystone ] && authtoken glance
    policy_defaults
  } >"$STATE/etc/glance/glance-api.conf"

  # Glance's two pipelines ("glance-api" unauthenticated, "glance-api-keystone"), images API v2 only.
  cat >"$STATE/etc/glance/glance-api-paste.ini" <<'EOF'
[pipeline:glance-api]
pipeline = http_proxy_to_wsgi versionnegotiation unauthenticated-context rootapp

[pipeline:glance-api-keystone]
pipeline = http_proxy_to_wsgi versionnegotiation authtoken context rootapp

[composite:rootapp]
paste.composite_factory = glance.api:root_app_factory
/: apiversions
/v2: apiv2app

[app:apiversions]
paste.app_factory = glance.api.versions:create_resource

[app:apiv2app]
paste.app_factory = glance.api.v2.router:API.factory

[filter:versionnegotiation]
paste.filter_factory = glance.api.middleware.version_negotiation:VersionNegotiationFilter.factory

[filter:unauthenticated-context]
paste.filter_factory = glance.api.middleware.context:UnauthenticatedContextMiddleware.factory

[filter:context]
paste.filter_factory = glance.api.middleware.context:ContextMiddleware.factory

[filter:authtoken]
paste.filter_factory = keystonemiddleware.auth_token:filter_factory
delay_auth_decision = true

[filter:http_proxy_to_wsgi]
paste.filter_factory = oslo_middleware.http_proxy_to_wsgi:HTTPProxyToWSGI.factory
EOF
}

write_keystone_conf() {
  mkdir -p "$STATE/etc/keystone" "$STATE/keystone/fernet-keys" "$STATE/keystone/credential-keys"
  chmod 700 "$STATE/keystone/fernet-keys" "$STATE/keystone/credential-keys"
  {
    cat <<EOF
[DEFAULT]
public_endpoint = http://127.0.0.1:$KEYSTONE_PORT/

[database]
connection = $(db keystone)

[token]
provider = fernet
expiration = $KEYSTONE_TOKEN_EXPIRATION

[fernet_tokens]
key_repository = $STATE/keystone/fernet-keys

[fernet_receipts]
key_repository = $STATE/keystone/fernet-keys

[credential]
key_repository = $STATE/keystone/credential-keys

[identity]
# bcrypt cost 4 instead of 12: about 1 ms per password check on a test stack.
password_hash_rounds = 4
# bcrypt reads 72 bytes anyway; the default 4096 logs a warning on every password check.
max_password_length = 72
EOF
    policy_defaults
  } >"$STATE/etc/keystone/keystone.conf"
}
