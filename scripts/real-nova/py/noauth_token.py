"""Paste filter for nova-api under noauth2 (test stack only).

noauth2 builds the request context from `X-Auth-Token: user:project` but leaves context.auth_token
empty, so Nova's own keystoneauth calls to Glance and Neutron fail with "No valid authentication is
available" and POST /servers answers 500. Placed right after noauth2 in the pipeline, this filter copies
the header into the context; Glance (unauthenticated pipeline) and the Neutron stub ignore its value.
"""
import webob.dec


class CopyToken(object):
    def __init__(self, app):
        self.app = app

    @webob.dec.wsgify
    def __call__(self, req):
        ctx = req.environ.get("nova.context")
        token = req.headers.get("X-Auth-Token")
        if ctx is not None and token and not ctx.auth_token:
            ctx.auth_token = token
        return req.get_response(self.app)


def filter_factory(global_conf, **local_conf):
    return CopyToken
