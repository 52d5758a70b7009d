"""Stand-ins for the two services Nova calls that the test stack does not run for real.

Neutron (NEUTRON_PORT): Nova Zed has no networking of its own. Even for servers booted with
"networks": "none" it lists the server's ports on GET /servers/{id} and deallocates them on delete.
Every list call (ports, networks, extensions, security-groups, ...) answers an empty list; DELETE
answers 204; POST/PUT answer 400 (servers cannot get ports here).

Keystone (KEYSTONE_PORT, 0 = off): under noauth2 Nova's only Keystone call is os-quota-sets checking
that the project exists (GET /v3/projects/{id}); every project exists. Off when a real Keystone runs.

Both listen on 127.0.0.1. Usage: stubs.py NEUTRON_PORT KEYSTONE_PORT
"""
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

NEUTRON_PORT, KEYSTONE_PORT = int(sys.argv[1]), int(sys.argv[2])


def keystone_answer(parts):
    v3 = {"id": "v3.14", "status": "stable", "updated": "2020-04-07T00:00:00Z",
          "links": [{"rel": "self", "href": "http://127.0.0.1:%d/v3/" % KEYSTONE_PORT}],
          "media-types": [{"base": "application/json",
                           "type": "application/vnd.openstack.identity-v3+json"}]}
    if not parts:
        return 300, {"versions": {"values": [v3]}}
    if parts == ["v3"]:
        return 200, {"version": v3}
    if len(parts) == 3 and parts[:2] == ["v3", "projects"]:
        return 200, {"project": {"id": parts[2], "name": parts[2], "domain_id": "default",
                                 "enabled": True, "is_domain": False, "parent_id": "default"}}
    return 404, {"error": {"code": 404, "title": "Not Found", "message": "keystone stub"}}


def neutron_answer(parts):
    if parts[:1] == ["v2.0"]:
        parts = parts[1:]
    if not parts:
        return 200, {"versions": [{"id": "v2.0", "status": "CURRENT"}]}
    if len(parts) == 1:  # a list call
        return 200, {parts[0].replace("-", "_"): []}
    return 404, {"NeutronError": {"type": "NotFound", "message": "neutron stub", "detail": ""}}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def reply(self, code, body=None):
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(code)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        path = self.path.split("?", 1)[0].removesuffix(".json")
        parts = [p for p in path.split("/") if p]
        answer = keystone_answer if self.server.server_address[1] == KEYSTONE_PORT else neutron_answer
        self.reply(*answer(parts))

    def do_DELETE(self):
        self.reply(204)

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.reply(400, {"NeutronError": {"type": "BadRequest", "message": "stub is read-only", "detail": ""}})

    do_PUT = do_POST

    def log_message(self, fmt, *args):
        sys.stderr.write("%s %s\n" % (self.log_date_time_string(), fmt % args))


if __name__ == "__main__":
    servers = [ThreadingHTTPServer(("127.0.0.1", p), Handler) for p in (NEUTRON_PORT, KEYSTONE_PORT) if p]
    for srv in servers[1:]:
        threading.Thread(target=srv.serve_forever, daemon=True).start()
    servers[0].serve_forever()
