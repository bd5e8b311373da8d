/**
 * CPU time by process group over a run, read from /proc (Linux): this process, its children
 * named by pid, the Postgres backends named by pid (else every `postgres` process) and every
 * `redis-server` process. Unlike throughput, CPU per unit
 * of work hardly moves when other work shares the machine, so benchmarks print it beside their
 * rates. Elsewhere than Linux the server groups read 0.
 */
import { readFileSync, readdirSync } from 'node:fs';

const TICKS_PER_SECOND = 100;

export interface CpuSample {
  /** Milliseconds of CPU (user + system) by group. */
  bench: number;
  postgres: number;
  redis: number;
  children: number;
  /** The Postgres group by pid, so that a backend that exits between two samples (a pool's
   * idle connection closing) drops out of the difference instead of making it negative. */
  postgresByPid: Map<number, number>;
}

function ticksOf(pid: string): { comm: string; ticks: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const close = stat.lastIndexOf(')');
    const comm = stat.slice(stat.indexOf('(') + 1, close);
    const fields = stat.slice(close + 2).split(' ');
    return { comm, ticks: Number(fields[11]) + Number(fields[12]) };
  } catch {
    return undefined;
  }
}

/** Milliseconds of CPU (user + system) one process has used, or 0 when it is gone. */
export function processCpuMs(pid: number): number {
  const entry = ticksOf(String(pid));
  return entry ? (entry.ticks * 1000) / TICKS_PER_SECOND : 0;
}

export function sampleCpu(
  childPids: readonly number[] = [],
  postgresPids?: readonly number[],
): CpuSample {
  const own = process.cpuUsage();
  const sample: CpuSample = {
    bench: (own.user + own.system) / 1000,
    postgres: 0,
    redis: 0,
    children: 0,
    postgresByPid: new Map(),
  };
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return sample;
  }
  const children = new Set(childPids.map(String));
  const backends = postgresPids ? new Set(postgresPids.map(String)) : undefined;
  for (const pid of pids) {
    const entry = ticksOf(pid);
    if (!entry) continue;
    const ms = (entry.ticks * 1000) / TICKS_PER_SECOND;
    if (children.has(pid)) sample.children += ms;
    else if (entry.comm === 'postgres' && (!backends || backends.has(pid))) {
      sample.postgres += ms;
      sample.postgresByPid.set(Number(pid), ms);
    } else if (entry.comm === 'redis-server') sample.redis += ms;
  }
  return sample;
}

/** CPU used between two samples, in ms per `units` units of work, by group. */
export function cpuPer(before: CpuSample, after: CpuSample, units: number): CpuSample {
  const per = (key: 'bench' | 'redis' | 'children') => (after[key] - before[key]) / units;
  let postgres = 0;
  for (const [pid, ms] of after.postgresByPid)
    postgres += ms - (before.postgresByPid.get(pid) ?? 0);
  return {
    bench: per('bench'),
    postgres: postgres / units,
    postgresByPid: new Map(),
    redis: per('redis'),
    children: per('children'),
  };
}

/**
 * Pids of the Postgres backends whose application_name starts with `name` (a benchmark's own
 * pools: `<schema>`, and `<schema>-workers` where it counts the workers' pool apart).
 */
export async function backendPids(
  db: { query(text: string, params: unknown[]): Promise<{ rows: { pid: number }[] }> },
  name: string,
): Promise<number[]> {
  const { rows } = await db.query(
    'SELECT pid FROM pg_stat_activity WHERE left(application_name, length($1)) = $1',
    [name],
  );
  return rows.map((row) => row.pid);
}

/**
 * Milliseconds of CPU by pid of a process and its live descendants (Linux): the embedded
 * PostgreSQL's postmaster and its backends, told apart from any other Postgres on the machine.
 */
export function treeCpuMs(rootPid: number): Map<number, number> {
  const parents = new Map<number, number>();
  const ticks = new Map<number, number>();
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return new Map();
  }
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      parents.set(Number(pid), Number(fields[1]));
      ticks.set(Number(pid), Number(fields[11]) + Number(fields[12]));
    } catch {
      // exited meanwhile
    }
  }
  const inTree = (pid: number): boolean => {
    for (let p: number | undefined = pid; p && p > 1; p = parents.get(p))
      if (p === rootPid) return true;
    return false;
  };
  const out = new Map<number, number>();
  for (const [pid, t] of ticks) if (inTree(pid)) out.set(pid, (t * 1000) / TICKS_PER_SECOND);
  return out;
}

/** CPU used between two treeCpuMs samples (processes gone by the second one drop out). */
export const treeCpuDelta = (before: Map<number, number>, after: Map<number, number>): number =>
  [...after].reduce((sum, [pid, ms]) => sum + ms - (before.get(pid) ?? 0), 0);
