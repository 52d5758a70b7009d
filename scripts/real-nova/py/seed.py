"""Make a started real-Nova stack usable and prove it works (stdlib only).

1. Uploads a 1 KiB raw image with a fixed id to Glance.
2. Creates the flavors the tests use (see FLAVORS).
3. Waits until the compute host is registered (GET /os-hypervisors), running
   `nova-manage cell_v2 discover_hosts` while it is not.
4. Boots one server, waits for ACTIVE, deletes it and waits for 404: the stack is ready only when a
   real create and delete went through. A server that goes ERROR (host not mapped yet) is deleted
   and the boot retried after another discover_hosts.

Environment: NOVA_URL, GLANCE_URL, IMAGE_ID, ADMIN_TOKEN (noauth2 "admin:<project>"), or KS_URL and
KS_ADMIN_PASSWORD (Keystone mode: an admin token is requested), DISCOVER_HOSTS (a shell command).
Progress goes to stderr. Exit status 1 with the reason on failure.
"""
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

ENV = os.environ
NOVA, GLANCE, IMAGE_ID = ENV["NOVA_URL"], ENV["GLANCE_URL"], ENV["IMAGE_ID"]
# id, name, vcpus, ram MiB, disk GiB. "no-valid-host" asks for more disk than the fake host has
# (FakeDriver reports 600000 GiB), so the scheduler finds no host and the server goes ERROR.
FLAVORS = [("1", "m1.tiny", 1, 512, 1), ("2", "m1.small", 2, 2048, 20), ("3", "m1.medium", 4, 4096, 40),
           ("no-valid-host", "no-valid-host", 1, 512, 1000000000)]
T0 = time.time()


def log(msg):
    sys.stderr.write("[seed %5.1fs] %s\n" % (time.time() - T0, msg))


def admin_token():
    if "KS_URL" not in ENV:
        return ENV["ADMIN_TOKEN"]
    body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": "admin", "domain": {"id": "default"}, "password": ENV["KS_ADMIN_PASSWORD"]}}},
        "scope": {"project": {"name": "admin", "domain": {"id": "default"}}}}}
    status, _, headers = http("POST", ENV["KS_URL"].rstrip("/") + "/v3/auth/tokens", body, token=None)
    if status != 201:
        sys.exit("seed: Keystone refused the admin password (HTTP %s)" % status)
    return headers["X-Subject-Token"]


def http(method, url, body=None, token="", raw=None, content_type="application/json"):
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    req = urllib.request.Request(url, data=data, method=method)
    if token:
        req.add_header("X-Auth-Token", token)
    if data is not None:
        req.add_header("Content-Type", content_type)
    req.add_header("OpenStack-API-Version", "compute 2.79")
    try:
        with urllib.request.urlopen(req, timeout=60) as res:
            text = res.read()
            return res.status, (json.loads(text) if text else None), res.headers
    except urllib.error.HTTPError as e:
        text = e.read()
        try:
            return e.code, json.loads(text), e.headers
        except ValueError:
            return e.code, text.decode(errors="replace"), e.headers


def must(expected, result, what):
    if result[0] not in expected:
        sys.exit("seed: %s failed: HTTP %s %s" % (what, result[0], json.dumps(result[1])[:500]))
    return result[1]


def upload_image(token):
    # An admin may publish images only under Keystone; without it "community" is visible to all.
    visibility = "public" if "KS_URL" in ENV else "community"
    must((201,), http("POST", GLANCE + "/v2/images", {
        "id": IMAGE_ID, "name": "nova-guard-fake", "disk_format": "raw", "container_format": "bare",
        "visibility": visibility}, token), "image create")
    must((204,), http("PUT", "%s/v2/images/%s/file" % (GLANCE, IMAGE_ID), raw=b"\0" * 1024, token=token,
                      content_type="application/octet-stream"), "image upload")
    log("image %s uploaded" % IMAGE_ID)


def create_flavors(token):
    for fid, name, vcpus, ram, disk in FLAVORS:
        must((200,), http("POST", NOVA + "/flavors", {"flavor": {
            "id": fid, "name": name, "vcpus": vcpus, "ram": ram, "disk": disk}}, token), "flavor " + name)
    log("flavors created: " + ", ".join("%s (%d vCPU)" % (f[0], f[2]) for f in FLAVORS))


def discover_hosts():
    subprocess.run(ENV["DISCOVER_HOSTS"], shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wait_for_compute(token, timeout_s=180):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        status, body, _ = http("GET", NOVA + "/os-hypervisors", token=token)
        if status == 200 and body.get("hypervisors"):
            log("compute host registered: " + body["hypervisors"][0]["hypervisor_hostname"])
            return
        discover_hosts()
        time.sleep(1)
    sys.exit("seed: the compute host did not register within %d s (see nova-compute.log)" % timeout_s)


def wait_server(token, server_id, until, timeout_s=60):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        status, body, _ = http("GET", "%s/servers/%s" % (NOVA, server_id), token=token)
        if status == 404:
            return None
        if status == 200 and body["server"]["status"] in until:
            return body["server"]
        time.sleep(0.05)
    sys.exit("seed: server %s did not reach %s within %d s" % (server_id, "/".join(until) or "404", timeout_s))


def boot_and_delete(token, attempts=4):
    for attempt in range(1, attempts + 1):
        server = must((202,), http("POST", NOVA + "/servers", {"server": {
            "name": "readiness-check", "imageRef": IMAGE_ID, "flavorRef": "1", "networks": "none"}}, token),
            "readiness create")["server"]
        server = wait_server(token, server["id"], ("ACTIVE", "ERROR"))
        must((204,), http("DELETE", "%s/servers/%s" % (NOVA, server["id"]), token=token), "readiness delete")
        if wait_server(token, server["id"], ()) is not None:
            sys.exit("seed: readiness server was not deleted")
        if server["status"] == "ACTIVE":
            log("readiness check: a server went ACTIVE and was deleted (attempt %d)" % attempt)
            return
        log("readiness server went ERROR (%s); discovering hosts and retrying"
            % (server.get("fault") or {}).get("message"))
        discover_hosts()
        time.sleep(1)
    sys.exit("seed: no server went ACTIVE in %d attempts" % attempts)


if __name__ == "__main__":
    token = admin_token()
    upload_image(token)
    create_flavors(token)
    wait_for_compute(token)
    boot_and_delete(token)
