/**
 * Finding, reading and merging `clouds.yaml` and `secure.yaml`.
 *
 * Ported from openstacksdk `openstack/config/loader.py` (`OpenStackConfig.__init__`,
 * `_load_config_file`, `_load_secure_file`, `_load_yaml_json_file`) and `config/_util.py`
 * (`merge_clouds`): the search directories are, in order, the current directory, the user config
 * directory, `~/.config/openstack`, the site config directory and `/etc/openstack`, where the user
 * and site config directories are platformdirs' (`PlatformDirs('openstack', 'OpenStack')`): on
 * Linux `$XDG_CONFIG_HOME/openstack` and `$XDG_CONFIG_DIRS` (default `/etc/xdg`) + `/openstack`; on
 * macOS `~/Library/Application Support/openstack` and `/Library/Application Support/openstack`; on
 * Windows `%LOCALAPPDATA%\OpenStack\openstack` and `%PROGRAMDATA%\OpenStack\openstack`. In each the names
 * `clouds.yaml`, `clouds.yml`, `clouds.json` (`secure.*` likewise). `OS_CLIENT_CONFIG_FILE` /
 * `OS_CLIENT_SECURE_FILE` are put first. The first existing file wins; unreadable files (EACCES) are
 * skipped. Unlike openstacksdk, a file that does not parse is an error (openstacksdk skips it with a
 * warning, which hides a typo behind "cloud not found").
 *
 * YAML is read as YAML 1.1, like openstacksdk's PyYAML `safe_load`: `yes`/`no`/`on`/`off` are
 * booleans (so `verify: yes` keeps TLS verification on; read as YAML 1.2 it was the string "yes",
 * which `get_boolean` takes as false) and `<<: *anchor` merge keys work.
 *
 * @module
 */
import { readFileSync, statSync } from 'node:fs';
import { join, win32 } from 'node:path';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import { ConfigError } from '../errors/index.js';
import { isPlainObject } from '../core/validate.js';

/** Where to look for files. */
export interface SearchOptions {
  /** Environment (for `OS_CLIENT_CONFIG_FILE`, `OS_CLIENT_SECURE_FILE`, `XDG_CONFIG_HOME`, `XDG_CONFIG_DIRS`). */
  env: Record<string, string | undefined>;
  /** Current directory. */
  cwd: string;
  /** Home directory. */
  homeDir: string;
  /** System directories searched last. Default: the site config directory, then `/etc/openstack`. */
  systemDirs?: string[] | undefined;
  /** Platform whose config folders are searched (`process.platform` values). Default `process.platform`. */
  platform?: NodeJS.Platform | undefined;
}

/**
 * The user and site config directories of platformdirs' `PlatformDirs('openstack', 'OpenStack')`
 * (openstacksdk `CONFIG_HOME`, `SITE_CONFIG_HOME`) on `platform`.
 */
export function platformConfigDirs(options: SearchOptions): { user: string; site: string } {
  const { env, homeDir } = options;
  const platform = options.platform ?? process.platform;
  if (platform === 'darwin') return { user: join(homeDir, 'Library', 'Application Support', 'openstack'), site: '/Library/Application Support/openstack' };
  if (platform === 'win32') {
    const local = env['LOCALAPPDATA'] || win32.join(homeDir, 'AppData', 'Local');
    const common = env['PROGRAMDATA'] || env['ALLUSERSPROFILE'] || 'C:\\ProgramData';
    return { user: win32.join(local, 'OpenStack', 'openstack'), site: win32.join(common, 'OpenStack', 'openstack') };
  }
  const xdgHome = env['XDG_CONFIG_HOME'] || join(homeDir, '.config');
  const xdgSite = (env['XDG_CONFIG_DIRS'] || '/etc/xdg').split(':')[0] || '/etc/xdg';
  return { user: join(xdgHome, 'openstack'), site: join(xdgSite, 'openstack') };
}

/** The search directories, in order, without duplicates. */
export function searchDirs(options: SearchOptions): string[] {
  const { cwd, homeDir } = options;
  const { user, site } = platformConfigDirs(options);
  const dirs = [cwd, user, join(homeDir, '.config', 'openstack')];
  dirs.push(...(options.systemDirs ?? [site, '/etc/openstack']));
  return [...new Set(dirs)];
}

/** Candidate paths of `base`.{yaml,yml,json} in every search directory, with the override file first. */
export function candidateFiles(base: 'clouds' | 'secure', options: SearchOptions): string[] {
  const override = options.env[base === 'clouds' ? 'OS_CLIENT_CONFIG_FILE' : 'OS_CLIENT_SECURE_FILE'];
  const files = searchDirs(options).flatMap((d) => ['yaml', 'yml', 'json'].map((ext) => join(d, `${base}.${ext}`)));
  return override ? [override, ...files] : files;
}

/** A parsed file: its path and top-level object. */
export interface LoadedFile {
  path: string;
  data: Record<string, unknown>;
}

function lineAndColumn(text: string, position: number): { line: number; col: number } {
  const before = text.slice(0, position);
  const line = before.split('\n').length;
  return { line, col: position - before.lastIndexOf('\n') };
}

/** The key on line `line` (1-based) of `text`, if that line looks like `key: ...`: a key name is never a secret. */
function keyOnLine(text: string, line: number): string | undefined {
  const m = /^\s*-?\s*["']?([A-Za-z0-9_.-]+)["']?\s*:/.exec(text.split('\n')[line - 1] ?? '');
  return m?.[1];
}

/**
 * Parse a YAML or JSON (by extension) config file. The error names the file, the line and the key
 * on it, never the text (which may hold a password).
 * @throws {@link ConfigError} when the file does not parse or its top level is not a mapping.
 */
export function parseConfigText(path: string, text: string): Record<string, unknown> {
  let data: unknown;
  try {
    data = path.endsWith('.json') ? JSON.parse(text) : parseYaml(text, { version: '1.1', merge: true, prettyErrors: false, logLevel: 'error' });
  } catch (error) {
    let where: { line: number; col: number } | undefined;
    if (error instanceof YAMLParseError && error.linePos?.[0]) where = error.linePos[0];
    else if (error instanceof YAMLParseError) where = lineAndColumn(text, error.pos[0]);
    else {
      const pos = /position (\d+)/.exec(String((error as Error).message))?.[1];
      if (pos !== undefined) where = lineAndColumn(text, Number(pos));
    }
    const key = where ? keyOnLine(text, where.line) : undefined;
    const code = error instanceof YAMLParseError ? ` (${error.code})` : '';
    throw new ConfigError(
      `cannot parse ${path}${where ? ` at line ${where.line}, column ${where.col}` : ''}${key ? ` (key ${key})` : ''}: ` +
        `not valid ${path.endsWith('.json') ? 'JSON' : 'YAML'}${code}`,
      { file: path, ...(key ? { key } : {}) },
    );
  }
  if (data === null || data === undefined) return {};
  if (typeof data !== 'object' || Array.isArray(data)) {
    throw new ConfigError(`${path} must hold a mapping with a top-level "clouds" key`, { file: path, key: 'clouds' });
  }
  return data as Record<string, unknown>;
}

/**
 * The first existing, readable file among `candidates`, parsed; undefined when there is none.
 * @throws {@link ConfigError} when that file does not parse.
 */
export function loadFirstFile(candidates: readonly string[]): LoadedFile | undefined {
  for (const path of candidates) {
    try {
      if (!statSync(path).isFile()) continue;
    } catch {
      continue;
    }
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (error) {
      if ((error as { code?: string }).code === 'EACCES') continue;
      throw new ConfigError(`cannot read ${path}: ${(error as { code?: string }).code ?? 'unknown error'}`, { file: path });
    }
    return { path, data: parseConfigText(path, text) };
  }
  return undefined;
}

/** Recursive merge of mappings; `over`'s scalars and lists win (openstacksdk `_util.merge_clouds`). */
export function mergeDeep(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) {
    const b = out[k];
    out[k] = isPlainObject(b) && isPlainObject(v) ? mergeDeep(b, v) : v;
  }
  return out;
}

/** The `clouds` mapping of a loaded file, or `{}`. @throws {@link ConfigError} when `clouds` is not a mapping. */
export function cloudsOf(file: LoadedFile | undefined): Record<string, unknown> {
  if (!file) return {};
  const clouds = file.data['clouds'];
  if (clouds === undefined || clouds === null) return {};
  if (!isPlainObject(clouds)) throw new ConfigError(`"clouds" in ${file.path} must be a mapping of cloud names`, { file: file.path, key: 'clouds' });
  return clouds;
}
