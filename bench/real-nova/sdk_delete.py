#!/usr/bin/python3
"""openstacksdk's delete-and-wait, as a CI script using the SDK writes it.

Deletes every server given (``conn.compute.delete_server``), then waits on each in turn
(``conn.compute.wait_for_delete`` with the SDK's defaults: a fetch every 2 s, 120 s at most) and prints
``<id>: deleted`` as each wait returns, so the bench can time every report as it arrives.

Auth: ``--cloud NAME`` (clouds.yaml, Keystone mode of the harness) or, without it, keystoneauth's
``admin_token`` plugin with NOVA_ENDPOINT and NOVA_TOKEN (the harness's noauth2 mode: Nova reads the
token ``user:project``).

Usage: sdk_delete.py [--cloud NAME] ID...
"""
import os
import sys

import openstack


def main(argv):
    cloud = None
    if len(argv) >= 2 and argv[0] == '--cloud':
        cloud, argv = argv[1], argv[2:]
    if cloud:
        conn = openstack.connect(cloud=cloud)
    else:
        conn = openstack.connect(
            auth_type='admin_token',
            auth={'endpoint': os.environ['NOVA_ENDPOINT'], 'token': os.environ['NOVA_TOKEN']},
        )
    for server_id in argv:
        conn.compute.delete_server(server_id)
    for server_id in argv:
        # wait_for_delete fetches the server itself; an id-only Server resource is enough.
        conn.compute.wait_for_delete(openstack.compute.v2.server.Server(id=server_id))
        print(f'{server_id}: deleted', flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
