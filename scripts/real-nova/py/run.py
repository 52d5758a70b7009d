"""Run an OpenStack console-script entry point from Debian's python3-* library packages.

The console scripts (nova-api-os-compute, nova-manage, glance-api, ...) ship in the *service* packages
(nova-api, nova-common, glance-api), whose maintainer scripts need debconf, dbconfig-common and init
scripts. The harness installs only the libraries and calls the entry points through this file.

Usage: run.py MODULE PROGRAM-NAME [ARGS...]
  e.g. run.py nova.cmd.api_os_compute nova-api-os-compute --config-file nova.conf
"""
import importlib
import sys

module, prog = sys.argv[1], sys.argv[2]
sys.argv = [prog] + sys.argv[3:]  # oslo.config reads the program name and options from sys.argv
sys.exit(importlib.import_module(module).main())
