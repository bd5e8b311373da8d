import { spawn, type ChildProcess } from 'node:child_process';

/** A built Herald entry point started as a process of its own. */
export interface HeraldProcess {
  child: ChildProcess;
  /** What it wrote so far, stdout and stderr together. */
  output: () => string;
  /** The URL its start line gives, once it printed it; rejects if it exits first. */
  url: () => Promise<string>;
}

/**
 * Starts `main` (a service's built `main.js`) with `env` on top of what every test's process
 * gets: an ephemeral port on 127.0.0.1, warnings only, and no readiness delay at shutdown
 * (nothing routes to it).
 */
export function spawnHerald(main: string, env: Record<string, string>): HeraldProcess {
  const child = spawn(process.execPath, [main], {
    env: {
      PATH: process.env['PATH'] ?? '',
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      SHUTDOWN_READINESS_DELAY_MS: '0',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  const url = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no URL printed:\n${out}`)), 120_000);
    child.stdout.on('data', () => {
      const match = /Herald is running at (http:\/\/\S+)/.exec(out);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${String(code)}:\n${out}`));
    });
  });
  // A caller that never asks for the URL does not leave its rejection unhandled.
  url.catch(() => undefined);
  return { child, output: () => out, url: () => url };
}

/** Whether a process of this pid exists (signal 0 checks without signalling). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
