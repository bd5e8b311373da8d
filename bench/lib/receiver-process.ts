import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';

/**
 * The benchmarks' webhook endpoint (bench/delivery/receiver.ts) in a child process of its own,
 * and the raw undici baseline that sends to it: shared by bench:delivery and bench:calls.
 */

interface ReceiverStats {
  count: number;
  bytes: number;
  arrivals: [string, number][];
}

/** An entity's calls at a /flow/ path, as the receiver keeps them. */
export interface EntityTally {
  calls: number;
  /** The version of its latest arrival (-1: none named). */
  last: number;
  highest: number;
}

/** What the receiver got at one /flow/ path since its reset. */
export interface FlowTally {
  calls: number;
  /** Events the calls listed (a batch's `events`, else 1 each). */
  events: number;
  /** When the first and the latest call arrived (performance.timeOrigin + now(), ms). */
  firstAt: number;
  lastAt: number;
  /** Entities listed, and the most calls (or batch entries) one of them had. */
  entities: number;
  maxCalls: number;
  /** Arrivals naming a version lower than one of their entity's received before. */
  backwards: number;
  /** Entities whose latest arrival is version `final` (by default: their highest version). */
  atFinal: number;
}

export class ReceiverProcess {
  private constructor(
    private readonly child: ChildProcess,
    readonly url: string,
  ) {}

  get pid(): number {
    return this.child.pid ?? 0;
  }

  static async start(): Promise<ReceiverProcess> {
    const child = fork(fileURLToPath(new URL('../delivery/receiver.js', import.meta.url)), [], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const port = await new Promise<number>((resolve, reject) => {
      child.once('message', (m: { port: number }) => resolve(m.port));
      child.once('error', reject);
    });
    return new ReceiverProcess(child, `http://127.0.0.1:${port}`);
  }

  #ask<T>(message: object): Promise<T> {
    return new Promise((resolve) => {
      this.child.once('message', (m: T) => resolve(m));
      this.child.send(message);
    });
  }

  mode(latency: boolean): Promise<unknown> {
    return this.#ask({ cmd: 'mode', latency });
  }

  stats(): Promise<ReceiverStats> {
    return this.#ask({ cmd: 'stats' });
  }

  /** What the receiver got at `path` (a /flow/ path) since its reset (see FlowTally.atFinal). */
  flow(path: string, final?: number): Promise<FlowTally> {
    return this.#ask({ cmd: 'flow', path, final });
  }

  flowReset(path: string): Promise<unknown> {
    return this.#ask({ cmd: 'flow-reset', path });
  }

  /** Resolves once the receiver has counted `target` requests in all. */
  async waitFor(target: number, timeoutMs = 180_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const { count } = await this.stats();
      if (count >= target) return;
      if (Date.now() > deadline) throw new Error(`receiver got ${count} of ${target} requests`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  async stop(): Promise<void> {
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.send({ cmd: 'exit' });
    await exited;
  }
}

/** Baseline: raw undici request(), `connections` in flight, `total` POSTs of about `bodyBytes`. */
export async function baseline(url: string, bodyBytes: number, connections: number, total: number) {
  const agent = new Agent({ connections, keepAliveTimeout: 60_000 });
  const body = JSON.stringify({ pad: 'x'.repeat(Math.max(0, bodyBytes - 10)) });
  let next = 0;
  const loop = async () => {
    while (next++ < total) {
      const response = await request(url, {
        method: 'POST',
        dispatcher: agent,
        headers: { 'content-type': 'application/json' },
        body,
      });
      await response.body.dump();
      if (response.statusCode !== 200) throw new Error(`baseline got ${response.statusCode}`);
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: connections }, loop));
  const seconds = (performance.now() - started) / 1000;
  await agent.close();
  return { count: total, seconds, bytes: Buffer.byteLength(body) };
}
