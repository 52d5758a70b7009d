/**
 * The quota audit watched over time, and its drift drawn as an SVG. Prints one JSON line per sample
 * and a summary line (as `nova-guard quota audit --watch` does), then writes the picture.
 *
 * Runs on an embedded fake Nova that makes two kinds of drift: servers in BUILD that Nova does not
 * count yet (drift that settles once they are placed) and usage with no server behind it (drift
 * that stays). Against a real cloud: `--endpoint <compute URL> --token <token>`.
 *
 * `npm run build --silent && npm run build:examples --silent && node build/examples/audit-watch.js [--out audit-watch.svg]`
 *
 * The picture is drawn with vega-lite (a devDependency of this repository, not of the library):
 * install `vega` and `vega-lite` to run this outside the repository.
 */
import { writeFileSync } from 'node:fs';
import { Command } from 'commander';
import { NovaClient, watchQuota, type WatchSample } from 'nova-guard';
import { FakeNova } from 'nova-guard/testing';

interface Flags {
  endpoint?: string;
  token?: string;
  out: string;
  intervalMs: string;
  samples: string;
}

/** The drift of each sample as a vega-lite line chart, one panel per resource (each with its own scale). */
async function drawDrift(samples: WatchSample[], file: string): Promise<void> {
  let vega: typeof import('vega');
  let vegaLite: typeof import('vega-lite');
  try {
    vega = await import('vega');
    vegaLite = await import('vega-lite');
  } catch {
    console.error('audit-watch: the picture needs the packages vega and vega-lite (npm install --save-dev vega vega-lite); the JSON lines above are complete without it.');
    return;
  }
  const t0 = samples[0]?.atMs ?? 0;
  const values = samples.flatMap((s) =>
    (['cores', 'ramMiB', 'instances'] as const).map((resource) => ({ t: (s.atMs - t0) / 1000, resource, drift: s.drift[resource] })),
  );
  const spec: import('vega-lite').TopLevelSpec = {
    title: 'Quota audit: reported − counted, over time',
    data: { values },
    facet: { row: { field: 'resource', type: 'nominal', title: null } },
    resolve: { scale: { y: 'independent' } },
    spec: {
      width: 420,
      height: 110,
      mark: { type: 'line', point: true },
      encoding: {
        x: { field: 't', type: 'quantitative', title: 'seconds since the first sample' },
        y: { field: 'drift', type: 'quantitative', title: 'drift' },
      },
    },
  };
  const view = new vega.View(vega.parse(vegaLite.compile(spec).spec), { renderer: 'none' });
  writeFileSync(file, await view.toSVG());
  view.finalize();
  console.error(`audit-watch: wrote ${file}`);
}

async function main(): Promise<void> {
  const flags = new Command('audit-watch')
    .option('--endpoint <url>', 'compute endpoint of a real cloud (default: an embedded fake Nova)')
    .option('--token <token>', 'token for --endpoint')
    .option('--out <file>', 'SVG to write', 'audit-watch.svg')
    .option('--interval-ms <ms>', 'pause between samples, ms', '300')
    .option('--samples <n>', 'number of samples', '12')
    .parse()
    .opts<Flags>();
  let nova: FakeNova | undefined;
  let client: NovaClient;
  if (flags.endpoint) {
    client = new NovaClient({ endpoint: flags.endpoint, token: flags.token ?? '', microversion: '2.79' });
  } else {
    nova = await FakeNova.start({ buildDelayMs: 1500, deletedWindowMs: 0 });
    nova.countBuildInUsage(false); // BUILD servers count once placed: drift that settles
    nova.causes.staleUsage({ cores: 4, ram: 2048 }); // no server behind it: drift that stays
    client = new NovaClient({ endpoint: nova.endpoint, token: `admin:${nova.projectId}`, microversion: '2.79', adapter: nova.adapter });
    nova.addServer({ name: 'ci-steady', flavorId: '1' });
    for (let i = 0; i < 3; i++) await client.createServer({ name: `ci-build-${i}`, flavorRef: '2', imageRef: 'img', networks: 'none' });
  }
  try {
    const w = await watchQuota(client, {
      intervalMs: Number(flags.intervalMs),
      samples: Number(flags.samples),
      checkGhosts: false,
      onSample: (s) => console.log(JSON.stringify({ type: 'sample', ...s })),
    });
    console.log(JSON.stringify({ type: 'summary', trend: w.trend, persistent: w.persistent, settled: w.settled }));
    await drawDrift(w.samples, flags.out);
  } finally {
    await nova?.close();
  }
}

await main();
