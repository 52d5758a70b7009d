// The output formats of cliff, in-process: tables, JSON as Python writes it, YAML, value, -c and
// --max-width; and how `server delete` finds a server by name (osc-lib `find_resource`).
import { describe, expect, it } from 'vitest';
import { borderedTable, ColumnError, csvLine, formatList, formatOne, type Cell } from '../../src/cli/format.js';
import { resolveServer, resolveServers } from '../../src/cli/resolve.js';
import { ValidationError } from '../../src/errors/index.js';
import { clientFor, startNova } from '../helpers.js';

const headers = ['Name', 'Value'];
const rows = [
  ['maxTotalCores', 20],
  ['maxTotalInstances', -1],
] as const;

describe('cliff formats', () => {
  it('table: borders, text left, numbers right', () => {
    expect(formatList(headers, rows, {})).toBe(
      [
        '+-------------------+-------+',
        '| Name              | Value |',
        '+-------------------+-------+',
        '| maxTotalCores     |    20 |',
        '| maxTotalInstances |    -1 |',
        '+-------------------+-------+',
      ].join('\n'),
    );
  });

  it('json: indent 2, or one line with ", " and ": " (--noindent)', () => {
    expect(formatList(headers, rows, { format: 'json' })).toBe(JSON.stringify([{ Name: 'maxTotalCores', Value: 20 }, { Name: 'maxTotalInstances', Value: -1 }], null, 2));
    expect(formatList(headers, rows, { format: 'json', noindent: true })).toBe('[{"Name": "maxTotalCores", "Value": 20}, {"Name": "maxTotalInstances", "Value": -1}]');
    expect(formatOne([['id', 'x'], ['n', null]], { format: 'json', noindent: true })).toBe('{"id": "x", "n": null}');
  });

  it('yaml: a list of mappings with sorted keys; value: space-separated rows', () => {
    expect(formatList(['b', 'a'], [[1, 'x']], { format: 'yaml' })).toBe('- a: x\n  b: 1');
    expect(formatList(headers, rows, { format: 'value' })).toBe('maxTotalCores 20\nmaxTotalInstances -1');
  });

  it('-c keeps the named columns in the command\'s order, ignores unknown ones, and fails when none is known', () => {
    expect(formatList(headers, rows, { format: 'value', column: ['Value', 'Nope'] })).toBe('20\n-1');
    expect(() => formatList(headers, rows, { column: ['Nope'] })).toThrow(ColumnError);
    expect(() => formatList(headers, rows, { column: ['Nope'] })).toThrow("No recognized column names in ['Nope']. Recognized columns are ('Name', 'Value').");
  });

  it('show (one object): a Field/Value table, one value a line with -f value', () => {
    expect(formatOne([['id', 'abc'], ['status', 'ACTIVE']], {})).toBe(
      ['+--------+--------+', '| Field  | Value  |', '+--------+--------+', '| id     | abc    |', '| status | ACTIVE |', '+--------+--------+'].join('\n'),
    );
    expect(formatOne([['id', 'abc'], ['status', 'ACTIVE']], { format: 'value', column: ['status'] })).toBe('ACTIVE');
  });

  it('--max-width wraps the widest column at spaces; <1 turns it off; a non-integer is bad usage', () => {
    const t = borderedTable(['Name', 'Detail'], [['a', 'one two three four five six seven']], 24);
    expect(t.split('\n').every((l) => l.length <= 24)).toBe(true);
    expect(t.split('\n').slice(3, 6)).toEqual(['| a    | one two three |', '|      | four five six |', '|      | seven         |']);
    expect(formatList(['Name', 'Detail'], [['a', 'one two three four five six seven']], { maxWidth: '0' })).toContain('one two three four five six seven');
    expect(() => formatList(headers, rows, { maxWidth: 'wide' })).toThrow(ValidationError);
  });

  it('csv: RFC 4180 (a field with a comma, a quote, CR or LF is quoted, quotes doubled); --quote nonnumeric (default), all, minimal, none', () => {
    const headers = ['Name', 'Count', 'Note'];
    const rows: Cell[][] = [['a,b', 3, 'say "hi"'], ['line\nbreak', 0, null], ['plain', -1.5, '\u001b[2J']];
    expect(formatList(headers, rows, { format: 'csv' }).split('\n')).toEqual(['"Name","Count","Note"', '"a,b",3,"say ""hi"""', '"line', 'break",0,', '"plain",-1.5,"\\u001b[2J"']);
    expect(csvLine(['x', 1, null], 'all')).toBe('"x","1",""');
    expect(csvLine(['x', 1, null, 'a"b'], 'minimal')).toBe('x,1,,"a""b"');
    expect(csvLine(['x', 'a,b'], 'none')).toBe('x,"a,b"');
    expect(formatList(headers, rows, { format: 'csv', column: ['Count'] })).toBe('"Count"\n3\n0\n-1.5');
  });

  it('control characters in a cell are made visible, never sent to the terminal', () => {
    expect(formatList(['Name'], [['a\u001b[2Jb']], { format: 'value' })).not.toContain('\u001b');
  });
});

describe('finding a server by name or id (osc-lib find_resource)', () => {
  it('a UUID is an id (no request); anything else an exact name, with no GET by id: a regular expression character in the name is literal', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    const byId = nova.addServer({ name: 'x' }).id;
    const dotted = nova.addServer({ name: 'web.1' }).id;
    nova.addServer({ name: 'webx1' });
    nova.addServer({ name: 'web.10' });
    // A UUID is taken as an id without a request: the delete tells whether it exists.
    const before = nova.requests.length;
    expect(await resolveServer(client, byId)).toEqual({ id: byId, unverified: true });
    expect(nova.requests.length).toBe(before);
    expect(await resolveServer(client, 'web.1')).toEqual({ id: dotted, unverified: false });
    // Nova answers 404 for a string that is not a UUID: no GET /servers/web.1 is sent.
    expect(nova.requests.slice(before).map((r) => `${r.method} ${r.path}`)).toEqual(['GET /servers/detail']);
    // A UUID no server has as its id: the delete tells (then it is looked up as a name).
    const uuid = '3bceb063-7bc7-41c3-acff-88b2d02e4240';
    expect(await resolveServer(client, uuid)).toEqual({ id: uuid, unverified: true });
    expect(await resolveServer(client, 'web.')).toBeUndefined();
    expect(await resolveServer(client, 'a/b')).toBeUndefined();
  });

  it("a UUID in upper case or without dashes is taken in Nova's canonical form (lower case, dashed), without a request", async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    const id = nova.addServer({ name: 'x' }).id;
    for (const given of [id.toUpperCase(), id.replace(/-/g, ''), id.replace(/-/g, '').toUpperCase()]) {
      expect(await resolveServer(client, given)).toEqual({ id, unverified: true });
    }
    expect(nova.requests).toEqual([]);
  });

  it('several with the name fail; a missing one fails unless ignored; a server given twice is deleted once', async () => {
    const nova = await startNova();
    const client = clientFor(nova);
    nova.addServer({ name: 'dup' });
    nova.addServer({ name: 'dup' });
    const one = nova.addServer({ name: 'one' }).id;
    const r = await resolveServers(client, ['dup', 'missing', 'one', one], { concurrency: 2, ignoreMissing: false });
    expect(r.ids).toEqual([one]);
    expect(r.givenAs.get(one)).toBe('one');
    expect(r.failures.map((f) => [f.nameOrId, f.error.message])).toEqual([
      ['dup', "More than one server exists with the name 'dup'."],
      ['missing', "No server with a name or ID of 'missing' exists."],
    ]);
    const ignored = await resolveServers(client, ['missing'], { concurrency: 1, ignoreMissing: true });
    expect(ignored).toEqual({ ids: [], givenAs: new Map(), failures: [], unverified: new Set() });
  });
});
