/**
 * Where the ledger file may live: SQLite's locks are not safe on a network file system (sqlite.org,
 * "File Locking And Concurrency": NFS locking is often broken), so a directory on one is refused
 * before the file is opened. Linux only: the file system type comes from `/proc/mounts` (the mount
 * with the longest mount point that holds the directory); where that file cannot be read, nothing
 * is refused.
 *
 * @module
 */
import { readFileSync, realpathSync } from 'node:fs';
import { ValidationError } from '../errors/index.js';

/** File system types whose locks SQLite cannot rely on (network and cluster file systems, FUSE mounts of remote stores). */
export const NETWORK_FILE_SYSTEMS: ReadonlySet<string> = new Set([
  'nfs', 'nfs4', 'cifs', 'smb', 'smb2', 'smb3', 'smbfs', 'ncpfs', 'afs', 'coda', '9p', 'ceph', 'glusterfs', 'lustre', 'gpfs', 'beegfs', 'ocfs2', 'gfs2', 'davfs', 'sshfs', 'virtiofs',
  'fuse.sshfs', 'fuse.glusterfs', 'fuse.cephfs', 'fuse.ceph-fuse', 'fuse.s3fs', 'fuse.rclone', 'fuse.davfs2', 'fuse.gcsfuse', 'fuse.juicefs', 'fuse.lizardfs', 'fuse.moosefs', 'fuse.smbnetfs',
]);

/** `/proc/mounts` octal escapes (`\040` for a space) decoded. */
function unescapeMount(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}

/**
 * The mount (point and type) that holds `dir` (an absolute, resolved path), by the longest mount
 * point of `mounts` (the text of `/proc/mounts`) that is `dir` or a parent of it.
 */
export function mountOf(dir: string, mounts: string): { point: string; type: string } | undefined {
  let best: { point: string; type: string } | undefined;
  for (const line of mounts.split('\n')) {
    const f = line.split(' ');
    if (f.length < 3) continue;
    const point = unescapeMount(f[1]!);
    const type = f[2]!;
    const inside = point === '/' || dir === point || dir.startsWith(point.endsWith('/') ? point : `${point}/`);
    if (inside && (best === undefined || point.length >= best.point.length)) best = { point, type };
  }
  return best;
}

/**
 * Refuse `dir` when it is on a network file system.
 * @param dir - An existing directory.
 * @param mounts - The text of `/proc/mounts` (read when not given; when it cannot be read, nothing is refused).
 * @throws `ValidationError` naming the directory, the mount point and its type.
 */
export function refuseNetworkFileSystem(dir: string, mounts?: string): void {
  let text = mounts;
  if (text === undefined) {
    try {
      text = readFileSync('/proc/mounts', 'utf8');
    } catch {
      return;
    }
  }
  let real = dir;
  try {
    real = realpathSync(dir);
  } catch {
    // judged as given
  }
  const m = mountOf(real, text);
  if (m !== undefined && (NETWORK_FILE_SYSTEMS.has(m.type) || m.type.startsWith('nfs'))) {
    throw new ValidationError(
      `the SQLite ledger cannot live in ${dir}: it is on a network file system (${m.type}, mounted at ${m.point}), where SQLite's file locks are not reliable; ` +
        'choose a directory on a local disk (sqlite:/path/on/local/disk) or use a Redis ledger (redis://...) to share a quota across hosts',
    );
  }
}
