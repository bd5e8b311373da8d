import { spawn, type ChildProcess, type ChildProcessByStdio } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, nodeOnlyPath } from '@herald/testkit';

/**
 * The README's quick start as a newcomer runs it: `npm start` on a machine where Node is all there
 * is (a PATH without redis-server and PostgreSQL's programs, nothing listening for Herald), then the
 * "Five minutes with Herald" commands exactly as printed, but for the two ports (3000 and 4000 may
 * be taken on a shared machine) and the data folder (a temporary one, not the checkout's .herald).
 */
const repo = fileURLToPath(new URL('../../../', import.meta.url));
const dirs: string[] = [];
const children: ChildProcess[] = [];

afterAll(async () => {
  for (const child of children) stopGroup(child);
  for (const dir of dirs) await rm(dir, { recursive: true, force: true, maxRetries: 10 });
});

/** Ends a detached child and everything it started (its process group). */
function stopGroup(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    // Already gone.
  }
}

/** Starts `command` detached (afterAll ends its process group), collecting its stdout and stderr. */
function startGroup(
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
): { child: ChildProcessByStdio<null, Readable, Readable>; output: () => string } {
  const child = spawn(command, args, {
    ...options,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  children.push(child);
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  return { child, output: () => output };
}

const exited = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve(child.exitCode);
    child.once('exit', (code) => resolve(code));
  });

/** The README's "Five minutes with Herald" shell block. */
async function walkthrough(): Promise<string> {
  const readme = await readFile(join(repo, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Five minutes with Herald'));
  const block = /```sh\n([\s\S]*?)```/.exec(section);
  if (!block) throw new Error('README: no sh block under "Five minutes with Herald"');
  return block[1]!;
}

describe('the quick start, verbatim', { timeout: 240_000 }, () => {
  it('npm start on a machine with Node only, then the walkthrough: the receiver gets the record, the call log shows its attempt, the console answers', async () => {
    const home = await mkdtemp(join(tmpdir(), 'herald-quick-start-'));
    dirs.push(home);
    const bin = await nodeOnlyPath(join(home, 'bin'));
    const dataDir = join(home, '.herald');
    const [port, receiverPort] = [await freePort(), await freePort()];
    const env = { PATH: bin, HOME: home, LANG: 'C.UTF-8' };

    // The start command, in the checkout, as the README prints it.
    const { child: herald, output: heraldOut } = startGroup('npm', ['start'], {
      cwd: repo,
      env: {
        ...env,
        PORT: String(port),
        HOST: '127.0.0.1',
        HERALD_DATA_DIR: dataDir,
        // Nothing routes to it: its SIGTERM need not give readiness time to be seen.
        SHUTDOWN_READINESS_DELAY_MS: '0',
      },
    });
    // Its banner, or its exit (whichever comes first; a first start builds nothing here: the test
    // command built it).
    await new Promise<void>((resolve, reject) => {
      const banner = `Herald is running at http://127.0.0.1:${port}`;
      const timer = setTimeout(() => reject(new Error(`no banner:\n${heraldOut()}`)), 180_000);
      herald.stdout.on('data', () => {
        if (!heraldOut().includes(banner)) return;
        clearTimeout(timer);
        resolve();
      });
      herald.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`npm start exited with ${String(code)}:\n${heraldOut()}`));
      });
    });
    expect(heraldOut()).toContain(`http://127.0.0.1:${port}/console`);
    expect(heraldOut()).toMatch(/receivers on this machine/);
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready', checks: { database: 'ok' } });

    // The walkthrough, in a folder whose .herald is the data folder, as at the checkout's root.
    const script = (await walkthrough())
      .replaceAll('127.0.0.1:3000', `127.0.0.1:${port}`)
      .replaceAll('127.0.0.1:4000', `127.0.0.1:${receiverPort}`)
      .replaceAll('listen(4000)', `listen(${receiverPort})`);
    const { child: shell, output } = startGroup('bash', ['-c', script], { cwd: home, env });
    expect(await exited(shell)).toBe(0);
    const out = output();

    // The receiver printed the signed call of the record.
    expect(out).toMatch(/received \d+ \{.*"post-1".*\}$/m);
    // The call log: the call delivered, its attempt with the receiver's answer, then the record.
    expect(out).toMatch(/"type":"webhook_call".*"status":"success"/);
    expect(out).toMatch(/"type":"webhook_call_attempt".*"response_status":200/);
    expect(out).toMatch(/"type":"item","id":"post-1"/);
    // Every curl got an answer in the API's envelope, none an error.
    expect(out).not.toMatch(/"type":"api_error"/);

    // The console the walkthrough sends the reader to, and `/` leading there.
    const root = await fetch(`http://127.0.0.1:${port}/`, { redirect: 'manual' });
    expect(root.headers.get('location')).toBe('/console/');
    const consolePage = await fetch(`http://127.0.0.1:${port}/console/`);
    expect(consolePage.status).toBe(200);
    expect(await consolePage.text()).toContain('<div id="app">');

    stopGroup(shell);
    herald.kill('SIGTERM');
    stopGroup(herald);
    await exited(herald);
  });
});
