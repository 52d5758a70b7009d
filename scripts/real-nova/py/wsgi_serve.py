"""Serve Placement's or Keystone's WSGI application on 127.0.0.1 with a threaded stdlib server.

Debian runs them under uwsgi/Apache; a test stack needs neither. Configuration comes from the
environment: OS_PLACEMENT_CONFIG_DIR (placement.conf in it) and OS_KEYSTONE_CONFIG_DIR (keystone.conf).

Usage: wsgi_serve.py placement|keystone PORT
"""
import os
import sys
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server


class ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class QuietHandler(WSGIRequestHandler):
    def log_message(self, *args):  # the applications log requests themselves
        pass


def application(kind):
    if kind == "placement":
        from placement.wsgi import init_application
        return init_application()
    if kind == "keystone":
        from keystone.server.wsgi import initialize_public_application
        return initialize_public_application()
    sys.exit("unknown application %r" % kind)


if __name__ == "__main__":
    kind, port = sys.argv[1], int(sys.argv[2])
    sys.argv[1:] = []  # keystone's application parses the command line as oslo.config options
    make_server("127.0.0.1", port, application(kind), ThreadingServer, QuietHandler).serve_forever()
