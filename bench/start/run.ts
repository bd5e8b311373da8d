/**
 * `npm start`'s time to Herald's banner (issue 29: ≤ 5 s warm), in a fresh clone of this
 * repository's HEAD: the first start (install from the pnpm store, build, a new embedded
 * database), a restart with nothing changed, a restart after one source file changed, and beside
 * them, in the same clone, the baseline: what the start did before it skipped anything (pnpm
 * install, pnpm run build, then Herald), and Herald's process alone.
 *
 *   pnpm bench:start        (RUNS=3 warm restarts by default)
 *
 * The default start needs no Redis: the queues run on the embedded PostgreSQL.
 */
import { execFile, spawn } from 'node:child_process';
import { appendFile, mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { nodeOnlyPath } from '@herald/testkit';
import { table } from '../lib/table.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const RUNS = Number(process.env['RUNS'] ?? 3);
const run = promisify(execFile);

const work = await mkdtemp(join(tmpdir(), 'herald-bench-start-'));
const clone = join(work, 'herald');
// A newcomer's machine: Node and the usual tools on the PATH, no Redis or PostgreSQL programs.
const PATH = await nodeOnlyPath(join(work, 'bin'));

/** Runs `command` in the clone until Herald prints its banner; seconds to it, then stops Herald. */
async function timeToBanner(command: string): Promise<number> {
  const started = performance.now();
  const child = spawn('bash', ['-c', command], {
    cwd: clone,
    env: {
      PATH,
      HOME: process.env['HOME'] ?? '',
      PORT: '0',
      HOST: '127.0.0.1',
      HERALD_DATA_DIR: join(work, 'data'),
      LOG_LEVEL: 'warn',
      SHUTDOWN_READINESS_DELAY_MS: '0',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const seconds = await new Promise<number>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      if (/Herald is running at http/.test(out)) resolve((performance.now() - started) / 1000);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => reject(new Error(`exited with ${String(code)}:\n${out}`)));
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
  return seconds;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;
const fmt = (values: number[]) =>
  values.length === 1
    ? `${values[0]!.toFixed(1)} s`
    : `${median(values).toFixed(1)} s (${values.map((v) => v.toFixed(1)).join(', ')})`;

try {
  await run('git', ['clone', '--quiet', '--no-hardlinks', ROOT, clone]);
  const rows: string[][] = [];
  const cold = await timeToBanner('bash scripts/start.sh');
  rows.push(['first start of a fresh clone', 'install, build, new embedded database', fmt([cold])]);

  const warm: number[] = [];
  for (let i = 0; i < RUNS; i++) warm.push(await timeToBanner('bash scripts/start.sh'));
  rows.push(['restart, nothing changed', 'Herald only (stamps match)', fmt(warm)]);

  await appendFile(join(clone, 'packages/contract/src/index.ts'), '// edited\n');
  const edited = await timeToBanner('bash scripts/start.sh');
  rows.push(['restart, one source file edited', 'build, Herald', fmt([edited])]);

  const baseline: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    baseline.push(
      await timeToBanner(
        'source scripts/ensure-pnpm.sh && pnpm_ install --frozen-lockfile --prefer-offline ' +
          '>/dev/null && pnpm_ run build >/dev/null && exec node services/standalone/dist/main.js',
      ),
    );
  }
  rows.push(['baseline: restart as before', 'install, build, Herald', fmt(baseline)]);

  const alone: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    alone.push(await timeToBanner('exec node services/standalone/dist/main.js'));
  }
  rows.push(["Herald's process alone", 'node services/standalone/dist/main.js', fmt(alone)]);

  process.stdout.write(
    `\nnpm start to its banner (embedded database), median of ${RUNS} where several; ` +
      `${cpus().length} cores, load average ${loadavg()[0]!.toFixed(1)}\n\n` +
      table(['start', 'what runs', 'to the banner'], rows),
  );
} finally {
  await rm(work, { recursive: true, force: true });
}
