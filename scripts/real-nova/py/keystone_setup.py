"""Fill a freshly bootstrapped Keystone for the real-Nova stack (stdlib only).

`keystone-manage bootstrap` made the admin user, project and role, the roles member and reader, and
the identity endpoints. This adds:
  * the catalog: compute, placement, image, network (public and internal, RegionOne);
  * role "service" and project "service" with the users nova, placement, glance, neutron, each with
    roles admin (Placement's API policy, token validation) and service (their X-Service-Token);
  * project "ci" with user "ci-bot" (role member) and ci-bot's application credential "nova-guard-ci"
    (restricted, no expiry), created with ci-bot's own token.
Prints shell assignments (KS_*_ID=...) for start.sh; never prints a secret.

Environment: KS_URL, KS_ADMIN_PASSWORD, KS_SERVICE_PASSWORD, KS_CI_PASSWORD, KS_APPCRED_SECRET,
COMPUTE_URL, PLACEMENT_URL, IMAGE_URL, NETWORK_URL.
"""
import json
import os
import sys
import urllib.error
import urllib.request

KS = os.environ["KS_URL"].rstrip("/") + "/v3"
ENV = os.environ


def call(method, path, body=None, token=None):
    req = urllib.request.Request(KS + path, method=method,
                                 data=None if body is None else json.dumps(body).encode())
    req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("X-Auth-Token", token)
    try:
        with urllib.request.urlopen(req, timeout=30) as res:
            raw, headers = res.read(), res.headers
    except urllib.error.HTTPError as e:
        sys.exit("keystone_setup: %s %s -> HTTP %s %s" % (method, path, e.code, e.read()[:300]))
    return headers, (json.loads(raw) if raw else None)


def password_token(user, password, project):
    headers, _ = call("POST", "/auth/tokens", {"auth": {
        "identity": {"methods": ["password"], "password": {"user": {
            "name": user, "domain": {"id": "default"}, "password": password}}},
        "scope": {"project": {"name": project, "domain": {"id": "default"}}}}})
    return headers["X-Subject-Token"]


def main():
    admin = password_token("admin", ENV["KS_ADMIN_PASSWORD"], "admin")

    def post(path, key, body):
        return call("POST", path, {key: body}, admin)[1][key]["id"]

    roles = {r["name"]: r["id"] for r in call("GET", "/roles", token=admin)[1]["roles"]}
    if "service" not in roles:  # Keystone 22's bootstrap makes admin, member and reader only
        roles["service"] = post("/roles", "role", {"name": "service"})

    for stype, name, url_var in (("compute", "nova", "COMPUTE_URL"), ("placement", "placement", "PLACEMENT_URL"),
                                 ("image", "glance", "IMAGE_URL"), ("network", "neutron", "NETWORK_URL")):
        service_id = post("/services", "service", {"type": stype, "name": name, "enabled": True})
        for interface in ("public", "internal"):
            post("/endpoints", "endpoint", {"service_id": service_id, "interface": interface,
                                            "url": ENV[url_var], "region_id": "RegionOne", "enabled": True})

    def project(name):
        return post("/projects", "project", {"name": name, "domain_id": "default", "enabled": True})

    def user(name, password, project_id, *role_names):
        user_id = post("/users", "user", {"name": name, "domain_id": "default", "password": password,
                                          "enabled": True, "default_project_id": project_id})
        for role in role_names:
            call("PUT", "/projects/%s/users/%s/roles/%s" % (project_id, user_id, roles[role]), token=admin)
        return user_id

    service_project = project("service")
    for name in ("nova", "placement", "glance", "neutron"):
        user(name, ENV["KS_SERVICE_PASSWORD"], service_project, "admin", "service")

    ci_project = project("ci")
    ci_user = user("ci-bot", ENV["KS_CI_PASSWORD"], ci_project, "member")
    ci_token = password_token("ci-bot", ENV["KS_CI_PASSWORD"], "ci")
    appcred = call("POST", "/users/%s/application_credentials" % ci_user, {"application_credential": {
        "name": "nova-guard-ci", "secret": ENV["KS_APPCRED_SECRET"]}}, ci_token)[1]["application_credential"]

    admin_project = call("GET", "/projects?name=admin", token=admin)[1]["projects"][0]["id"]
    print("KS_ADMIN_PROJECT_ID=%s" % admin_project)
    print("KS_CI_PROJECT_ID=%s" % ci_project)
    print("KS_APPCRED_ID=%s" % appcred["id"])


if __name__ == "__main__":
    main()
