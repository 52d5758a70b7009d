/**
 * `nova-guard quota show [--usage] [PROJECT_ID]`: the compute quotas of `GET
 * /os-quota-sets/{project_id}/detail` (Nova API reference, "Quota Sets", "Show The Detail of Quota")
 * as `openstack quota show --compute [--usage]` prints them (python-openstackclient
 * `common/quota.py` `ShowQuota`): a list with the columns `Resource` and `Limit` (and `In Use` and
 * `Reserved` with `--usage`), resources under openstack's names (`key_pairs` → `key-pairs`,
 * `metadata_items` → `properties`, ...), sorted by name, unlimited as -1.
 *
 * @module
 */
import type { Command } from 'commander';
import type { NovaClient } from '../nova/client.js';
import type { QuotaDetailItem } from '../core/types.js';
import { ConfigError } from '../errors/index.js';
import { withWaitNotice } from './waitNotice.js';
import { addFormatOptions, checkFormatFlags, formatList, limitCell, type FormatFlags } from './format.js';

/** Nova's quota names to openstack's (python-openstackclient `COMPUTE_QUOTAS`, `NOVA_NETWORK_QUOTAS`). */
const OSC_NAMES: Record<string, string> = {
  fixed_ips: 'fixed-ips',
  floating_ips: 'floating-ips',
  injected_file_content_bytes: 'injected-file-size',
  injected_file_path_bytes: 'injected-path-size',
  injected_files: 'injected-files',
  key_pairs: 'key-pairs',
  metadata_items: 'properties',
  security_group_rules: 'secgroup-rules',
  security_groups: 'secgroups',
  server_group_members: 'server-group-members',
  server_groups: 'server-groups',
};

/** Register `show` under the `quota` command. */
export function registerQuotaShowCommand(quota: Command, getClient: () => Promise<NovaClient>): void {
  addFormatOptions(
    quota
      .command('show')
      .description("show the project's compute quotas (like `openstack quota show --compute [--usage]`)")
      .argument('[project]', 'project id (default: the project of the token)')
      .option('--usage', 'show quota usage')
      .option('--compute', 'show compute quotas (the only kind nova-guard shows)'),
  ).action(async (project: string | undefined, flags: FormatFlags & { usage?: boolean }) => {
    checkFormatFlags(flags);
    const client = await getClient();
    const projectId = project ?? client.projectId;
    // A token that names no project is a configuration problem (exit 1), not bad usage.
    if (projectId === undefined) {
      throw new ConfigError('the token names no project, so there is no project to show: pass one (nova-guard quota show PROJECT_ID), or authenticate with a project-scoped cloud (--os-project-name / OS_PROJECT_NAME)');
    }
    const detail = await withWaitNotice(client, (hooks) => client.getQuotaSetDetail(projectId, hooks));
    const rows = Object.entries(detail)
      .filter((e): e is [string, QuotaDetailItem] => e[0] !== 'id' && typeof e[1] === 'object' && e[1] !== null)
      .map(([k, v]) => [OSC_NAMES[k] ?? k, v] as const)
      .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    const out = flags.usage
      ? formatList(['Resource', 'Limit', 'In Use', 'Reserved'], rows.map(([k, v]) => [k, limitCell(v.limit), limitCell(v.in_use), limitCell(v.reserved)]), flags)
      : formatList(['Resource', 'Limit'], rows.map(([k, v]) => [k, limitCell(v.limit)]), flags);
    console.log(out);
  });
}
