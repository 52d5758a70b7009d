"""Create Nova's database schemas and cell mappings in one process per database group.

What `nova-manage api_db sync`, `cell_v2 map_cell0`, `cell_v2 create_cell` and `db sync` do, without
paying Nova's import time (several seconds on a busy 2-vCPU machine) once per command, and with the
cell1 schema made in parallel with the API database and cell0:

  nova_db_setup.py api  NOVA_CONF CELL0_URL   API schema, cell0 mapping, cell1 mapping, cell0 schema
  nova_db_setup.py cell NOVA_CONF             cell1 schema ([database] connection)

Calls the same functions nova-manage calls (nova/cmd/manage.py, nova/db/migration.py, Nova 26.2).
"""
import sys
import time

from nova import config, context, objects
from nova.cmd import manage
from nova.db import migration


def step(message):
    sys.stdout.write("== %s %s\n" % (time.strftime("%H:%M:%S"), message))
    sys.stdout.flush()


def main(mode, conf, cell0_url=None):
    config.parse_args(["nova-manage", "--config-file", conf])
    objects.register_all()
    if mode == "cell":
        step("cell1 schema")
        migration.db_sync(database="main")
        return 0
    step("API schema")
    migration.db_sync(database="api")
    cells = manage.CellV2Commands()
    step("cell0 mapping")
    if cells.map_cell0(database_connection=cell0_url) != 0:
        return 1
    step("cell1 mapping")
    if cells.create_cell(name="cell1") != 0:
        return 1
    step("cell0 schema")
    ctxt = context.RequestContext()
    cell0 = objects.CellMapping.get_by_uuid(ctxt, objects.CellMapping.CELL0_UUID)
    with context.target_cell(ctxt, cell0) as cctxt:
        migration.db_sync(context=cctxt)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
