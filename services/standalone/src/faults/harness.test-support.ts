import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'vitest';
import { fileURLToPath } from 'node:url';
import { deliverJobId, eventJobId } from '@herald/contract';
import { freePort, waitUntil, type PrivatePostgres } from '@herald/testkit';
import { GATEWAY_ERROR_HEADER, Gateway } from './gateway.test-support.js';
import type { FaultRedis } from './servers.test-support.js';

/**
 * The fault suite's harness: the built Herald entry points as child processes on the suite's own
 * Postgres and Redis, a receiver that records every call, a steady load of POST /events, and the
 * figures each fault is judged by (sent, accepted, delivered, lost, duplicated, recovery).
 */

const SERVICES = fileURLToPath(new URL('../../../', import.meta.url));
export const REPO_ROOT = join(SERVICES, '..');
export const OUT_DIR = join(REPO_ROOT, '.ci', 'out');

export type HeraldKind = 'ingest' | 'read' | 'delivery' | 'standalone';
const MAIN: Record<HeraldKind, string> = {
  ingest: join(SERVICES, 'ingest', 'dist', 'main.js'),
  read: join(SERVICES, 'read', 'dist', 'main.js'),
  delivery: join(SERVICES, 'delivery', 'dist', 'main.js'),
  standalone: join(SERVICES, 'standalone', 'dist', 'main.js'),
};

/** Deliveries in flight at once for the one webhook: what a crash may leave to be sent twice. */
export const IN_FLIGHT_PER_WEBHOOK = 10;

/**
 * Every interval that bounds a recovery, shrunk so that each fault takes seconds. Some variables
 * are not read by every version of Herald (unknown ones are ignored): DELIVERY_LEASE_MS,
 * MATCH_JOB_ATTEMPTS, MATCH_JOB_BACKOFF_MS and SHUTDOWN_READINESS_DELAY_MS.
 */
export const SHRUNK_INTERVALS: Readonly<Record<string, string>> = {
  DELIVERY_RETRY_SCHEDULE_MS: '500,1000,2000',
  // Long enough for the suite's receiver to answer on a busy machine (a late answer is a
  // timeout, and the call is sent again: counted apart, as `retried`).
  DELIVERY_TIMEOUT_MS: '5000',
  DELIVERY_CONNECT_TIMEOUT_MS: '500',
  // A job lock or a lease that lapses while its process is alive but starved (a busy machine:
  // 1.5 s lapsed at load 19) makes the job or the calls another's, and an attempt in flight is
  // sent again: 4 s and 3 s keep that for a process that is really gone, and every recovery
  // within RECOVERY_LIMIT_S.
  DELIVERY_JOB_LOCK_MS: '4000',
  DELIVERY_SWEEP_INTERVAL_MS: '500',
  DELIVERY_SWEEP_AFTER_MS: '3000',
  EVENT_SWEEP_GRACE_MS: '2000',
  WEBHOOK_INDEX_RELOAD_MS: '2000',
  DELIVERY_LEASE_MS: '3000',
  // A run of timeouts on a busy machine opens the webhook's circuit: its calls then wait the
  // cool-down (60 s in production), longer than the suite waits for them.
  DELIVERY_CIRCUIT_COOLDOWN_MS: '2000',
  MATCH_JOB_ATTEMPTS: '3',
  MATCH_JOB_BACKOFF_MS: '100',
  SHUTDOWN_READINESS_DELAY_MS: '1000',
  SHUTDOWN_GRACE_MS: '5000',
  ENQUEUE_TIMEOUT_MS: '1000',
};

/**
 * FAULTS_INTERVALS=default runs the suite on Herald's default intervals instead, to measure what
 * a fault costs in production (docs/reliability.md); its recoveries then exceed the limit.
 */
export const DEFAULT_INTERVALS = process.env['FAULTS_INTERVALS'] === 'default';
/** The intervals the Herald processes run with. */
export const INTERVALS: Readonly<Record<string, string>> = DEFAULT_INTERVALS
  ? {}
  : SHRUNK_INTERVALS;

/**
 * The most seconds from a fault's end to the last delivery (with SHRUNK_INTERVALS), besides the
 * time the Herald processes started after it took to listen.
 */
export const RECOVERY_LIMIT_S = 15;
/**
 * What the recovery limit gains when a delivery process stalled after the fault's end (see
 * STALL_SIGNS): the others take its calls over once its lease ran out, and its jobs once their
 * locks did, as after a kill -9 (DELIVERY_LEASE_MS + DELIVERY_JOB_LOCK_MS, with SHRUNK_INTERVALS).
 */
const STALL_TAKEOVER_S =
  (Number(SHRUNK_INTERVALS['DELIVERY_LEASE_MS']) +
    Number(SHRUNK_INTERVALS['DELIVERY_JOB_LOCK_MS'])) /
  1000;
/**
 * How long after the fault's end the suite waits for every accepted event, at most, besides the
 * time the processes started after the fault took to listen.
 */
const SETTLE_TIMEOUT_MS = DEFAULT_INTERVALS ? 300_000 : 45_000;
/** Time allowed to one fault, from its set-up to its last check. */
export const FAULT_TIMEOUT_MS = SETTLE_TIMEOUT_MS + 255_000;
/** The load's pace: one event per request. */
const LOAD_RATE_PER_S = 50;
/**
 * Before the fault the load is steady: this many deliveries made, and at most one second of
 * accepted events not yet delivered (a process that has just started lags at first).
 */
const WARM_UP_DELIVERIES = 100;
/** The warm-up's whole time: the pace is lowered at most every WARM_UP_STEP_MS meanwhile. */
const WARM_UP_TIMEOUT_MS = 150_000;
const WARM_UP_STEP_MS = 20_000;
/** How long the rate Herald delivers at is measured before the pace is lowered to it. */
const PACE_WINDOW_MS = 5000;
/** The slowest pace: slower, the fault would say little (a fault of seconds still meets events). */
const MIN_LOAD_RATE_PER_S = 2;
/**
 * In the warm-up the load holds off while more than this many seconds of it are undelivered: a
 * Herald slower than the pace falls behind by little, and catches up soon once it is lowered.
 */
const WARM_UP_BACKLOG_S = 2;

const now = (): number => Date.now();
const randomHex = (bytes: number): string => randomBytes(bytes).toString('hex');

// ---------------------------------------------------------------------------------------------
// Herald processes
// ---------------------------------------------------------------------------------------------

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  at: number;
}

/** Why the harness expects a process to end; an exit without one is a crash. */
export type PlannedExit = 'kill' | 'stop' | 'refuse';

const OUTPUT_MAX = 8 * 1024 * 1024;

/**
 * What a delivery process logs when it ran on but could not hold its work in time: its lease
 * was not renewed within two thirds of DELIVERY_LEASE_MS (first attempts given up), or a job's
 * lock within DELIVERY_JOB_LOCK_MS (BullMQ: "could not renew lock"; or, when the lock lapsed
 * before a renewal was even tried and the stalled-job check handed the job to a worker again,
 * Redis refusing the first run's end with "Lock mismatch" or "Missing lock"). Alive but starved,
 * it is, for the others, a process gone: they take its calls and jobs over, and those it had in
 * flight may be sent again.
 */
const STALL_SIGNS =
  /the lease on these calls could not be renewed|could not renew lock for job|Lock mismatch for job|Missing lock for job/;

/** Every Herald process still running, for a last-resort kill when the test process exits. */
const live = new Set<ChildProcess>();

/** SIGKILL to every Herald process still running (for an exit handler: synchronous). */
export function killHeraldProcessesSync(): void {
  for (const child of live) child.kill('SIGKILL');
}

/** One built Herald entry point as a child process; its stdout and stderr kept in one buffer. */
export class HeraldProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<Exit>;
  exit: Exit | undefined;
  planned: PlannedExit | undefined;
  readonly startedAt = now();
  #output = '';
  /** When it logged a STALL_SIGNS line (now()). */
  readonly stalls: number[] = [];
  #listening = false;
  #onOutput: (() => void)[] = [];

  constructor(
    readonly name: string,
    readonly kind: HeraldKind,
    readonly port: number,
    env: Record<string, string>,
    /** Which of its kind's places in the stack it takes (a restart takes the same). */
    readonly slot = 0,
  ) {
    this.child = spawn(process.execPath, [MAIN[kind]], {
      env: { ...env, PORT: String(port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const keep = (chunk: Buffer): void => {
      const text = chunk.toString();
      if (STALL_SIGNS.test(text)) this.stalls.push(now());
      this.#output += text;
      if (this.#output.length > OUTPUT_MAX) this.#output = this.#output.slice(-OUTPUT_MAX / 2);
      if (!this.#listening && /"msg":"[a-z]+ listening/.test(this.#output)) this.#listening = true;
      for (const listener of this.#onOutput) listener();
    };
    this.child.stdout?.on('data', keep);
    this.child.stderr?.on('data', keep);
    live.add(this.child);
    this.exited = new Promise((resolve) => {
      this.child.once('exit', (code, signal) => {
        live.delete(this.child);
        this.exit = { code, signal, at: now() };
        for (const listener of this.#onOutput) listener();
        resolve(this.exit);
      });
    });
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get output(): string {
    return this.#output;
  }

  get running(): boolean {
    return this.exit === undefined;
  }

  /** Resolves once the process logs that it listens (workers started); rejects if it exits. */
  ready(timeoutMs: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (this.#listening) done(() => resolve());
        else if (this.exit) {
          done(() =>
            reject(new Error(`${this.name} exited (${describeExit(this.exit!)}) before listening`)),
          );
        }
      };
      const timer = setTimeout(
        () => done(() => reject(new Error(`${this.name} not listening after ${timeoutMs} ms`))),
        timeoutMs,
      );
      const done = (settle: () => void): void => {
        clearTimeout(timer);
        this.#onOutput = this.#onOutput.filter((listener) => listener !== check);
        settle();
      };
      this.#onOutput.push(check);
      check();
    });
  }

  /** Sends a signal the harness means (a planned exit) and waits for the exit, bounded. */
  async signal(signal: NodeJS.Signals, planned: PlannedExit, timeoutMs = 30_000): Promise<Exit> {
    this.planned = planned;
    if (this.running) this.child.kill(signal);
    return this.waitForExit(timeoutMs);
  }

  /** The exit, or SIGKILL after timeoutMs (the exit then says so). */
  async waitForExit(timeoutMs: number): Promise<Exit> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), timeoutMs);
    });
    const first = await Promise.race([this.exited, late]);
    clearTimeout(timer);
    if (first !== 'late') return first;
    this.child.kill('SIGKILL');
    return this.exited;
  }

  /**
   * The lines worth showing when a fault fails: warnings, errors, and anything not JSON (enough
   * of them for a crash's whole report, which begins with what emitted the error).
   */
  digest(lines = 80): string {
    return this.#output
      .split('\n')
      .filter((line) => {
        if (!line.trim()) return false;
        const level = /^\{"level":(\d+)/.exec(line);
        return !level || Number(level[1]) >= 40;
      })
      .slice(-lines)
      .map((line) => (line.length > 400 ? `${line.slice(0, 400)}…` : line))
      .join('\n');
  }
}

export function describeExit(exit: Exit): string {
  return exit.signal ? `signal ${exit.signal}` : `code ${String(exit.code)}`;
}

// ---------------------------------------------------------------------------------------------
// The receiver
// ---------------------------------------------------------------------------------------------

interface Call {
  eventId: string;
  /** The call's id (the payload's webhook_call_id), to read its attempts from Herald. */
  callId: string;
  firstAt: number;
  requests: number;
  /** The attempt number (attempted_auto_retries_count) of each request answered 200. */
  attempts: number[];
}

/**
 * A real endpoint that records every request's webhook-id, event and attempt number, and answers
 * 200 at once; while `failing`, it answers 503 and records nothing (the attempt failed).
 */
export class Receiver {
  /** By webhook-id (one per webhook call). */
  readonly calls = new Map<string, Call>();
  /** Webhook-ids by event id (one each, unless a call was created twice). */
  readonly byEvent = new Map<string, Set<string>>();
  /** Requests answered 200. */
  requests = 0;
  /** Requests answered 503 (while failing). */
  refused = 0;
  failing = false;
  lastNewAt = 0;
  readonly #sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<Receiver> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const receiver = new Receiver(
      server,
      `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    );
    server.on('connection', (socket: Socket) => {
      receiver.#sockets.add(socket);
      socket.once('close', () => receiver.#sockets.delete(socket));
    });
    server.on('request', (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        if (receiver.failing) {
          receiver.refused++;
          res.writeHead(503).end();
          return;
        }
        receiver.#record(String(req.headers['webhook-id']), Buffer.concat(chunks).toString());
        res.end('ok');
      });
    });
    return receiver;
  }

  get delivered(): number {
    return this.calls.size;
  }

  /**
   * Requests beyond the first of each call, in two kinds: `repeated`, an attempt number the
   * receiver had already answered 200 (the same attempt sent twice: what a crash may cause), and
   * `retried`, a later attempt number (Herald took an attempt the receiver answered for a failure,
   * a timeout on a busy machine: its call is listed, for its attempts to be checked).
   */
  repeats(): {
    repeated: number;
    retried: { callId: string; requests: number }[];
    /** The calls with a repeated attempt: all their requests, their repeats, the first's time. */
    resent: { callId: string; requests: number; repeats: number; firstAt: number }[];
  } {
    let repeated = 0;
    const retried: { callId: string; requests: number }[] = [];
    const resent: { callId: string; requests: number; repeats: number; firstAt: number }[] = [];
    for (const call of this.calls.values()) {
      const distinct = new Set(call.attempts).size;
      const repeats = call.attempts.length - distinct;
      repeated += repeats;
      if (distinct > 1) retried.push({ callId: call.callId, requests: distinct - 1 });
      if (repeats > 0) {
        resent.push({
          callId: call.callId,
          requests: call.attempts.length,
          repeats,
          firstAt: call.firstAt,
        });
      }
    }
    return { repeated, retried, resent };
  }

  #record(webhookId: string, body: string): void {
    this.requests++;
    // The default payload: the event's entity is the record, whose id the load makes the event
    // id; a body that is not the default payload is counted under the empty id.
    let payload: { entity?: { id?: unknown }; webhook_call_id?: unknown } = {};
    try {
      payload = JSON.parse(body) as typeof payload;
    } catch {
      // as above
    }
    const attempt = (payload as { attempted_auto_retries_count?: unknown })
      .attempted_auto_retries_count;
    const number = typeof attempt === 'number' ? attempt : -1;
    const seen = this.calls.get(webhookId);
    if (seen) {
      seen.requests++;
      seen.attempts.push(number);
      return;
    }
    const id = payload.entity?.id;
    const eventId = typeof id === 'string' ? id : '';
    const at = now();
    this.calls.set(webhookId, {
      eventId,
      callId: typeof payload.webhook_call_id === 'string' ? payload.webhook_call_id : '',
      firstAt: at,
      requests: 1,
      attempts: [number],
    });
    this.lastNewAt = at;
    let ids = this.byEvent.get(eventId);
    if (!ids) this.byEvent.set(eventId, (ids = new Set()));
    ids.add(webhookId);
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      for (const socket of this.#sockets) socket.destroy();
      this.server.close(() => resolve());
    });
  }
}

// ---------------------------------------------------------------------------------------------
// The load
// ---------------------------------------------------------------------------------------------

export interface Outcome {
  /** The event the request carried. */
  id: string;
  sentAt: number;
  at: number;
  /** The HTTP status, or the error's code (ECONNREFUSED, ECONNRESET, UND_ERR_SOCKET, timeout…). */
  outcome: string;
}

/** What fetch's error says went wrong, as one word. */
function errorCode(error: unknown): string {
  if (error instanceof Error && error.name === 'TimeoutError') return 'timeout';
  const cause = (error as { cause?: { code?: unknown; name?: unknown } }).cause;
  if (cause && typeof cause.code === 'string') return cause.code;
  if (cause && typeof cause.name === 'string') return cause.name;
  return error instanceof Error ? error.name : 'error';
}

/**
 * A steady stream of POST /events, one item event per request at `ratePerS`, each event the
 * creation of a record whose id is the event id. Requests go on whatever the answers; a 202 is a
 * promise (accepted), anything else is not.
 */
export class Load {
  sent = 0;
  /** Event id → when its 202 came back. */
  readonly accepted = new Map<string, number>();
  readonly outcomes: Outcome[] = [];
  #timer: NodeJS.Timeout | undefined;
  #holdWhile: (() => boolean) | undefined;
  #startedAt = 0;
  /** Requests sent before the pace last changed. */
  #sentBefore = 0;
  #inFlight = new Set<Promise<void>>();

  constructor(
    private readonly url: string,
    private readonly token: string,
    private readonly tag: string,
    private readonly modelId: string,
    /** Requests per second. */
    public ratePerS = LOAD_RATE_PER_S,
  ) {}

  start(): void {
    this.#countFromNow();
    this.#timer = setInterval(() => {
      // Held, the load sends nothing, nor makes up for it afterwards.
      if (this.#holdWhile?.()) return this.#countFromNow();
      const due =
        Math.floor(((now() - this.#startedAt) / 1000) * this.ratePerS) -
        (this.sent - this.#sentBefore);
      // Never more than 50 requests waiting: a stalled Herald is not buried under a backlog.
      for (let i = 0; i < due && this.#inFlight.size < 50; i++) this.#send();
    }, 20);
  }

  /** Sends nothing while `hold` says so (undefined: never holds). */
  holdWhile(hold: (() => boolean) | undefined): void {
    this.#holdWhile = hold;
  }

  /** Goes on at another pace from now. */
  setRate(ratePerS: number): void {
    this.ratePerS = ratePerS;
    this.#countFromNow();
  }

  /** The requests due are counted from now: none owed for the time before. */
  #countFromNow(): void {
    this.#startedAt = now();
    this.#sentBefore = this.sent;
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await Promise.all(this.#inFlight);
  }

  acceptedSince(at: number): number {
    let count = 0;
    for (const acceptedAt of this.accepted.values()) if (acceptedAt >= at) count++;
    return count;
  }

  /** Outcomes other than 202 since `at`, counted by kind. */
  refusalsSince(at: number): Record<string, number> {
    const counts: Record<string, number> = {};
    for (const { at: when, outcome } of this.outcomes) {
      if (when >= at && outcome !== '202') counts[outcome] = (counts[outcome] ?? 0) + 1;
    }
    return counts;
  }

  #send(): void {
    const id = `${this.tag}-${String(++this.sent).padStart(6, '0')}`;
    const event = {
      type: 'event',
      id,
      attributes: {
        entity_type: 'item',
        event_type: 'create',
        entity: {
          type: 'item',
          id,
          attributes: { title: `Record ${id}` },
          relationships: { item_type: { data: { type: 'item_type', id: this.modelId } } },
          meta: { status: 'draft' },
        },
      },
    };
    const sentAt = now();
    const request = fetch(`${this.url}/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${this.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ data: [event] }),
      signal: AbortSignal.timeout(15_000),
    })
      .then(async (response) => {
        await response.arrayBuffer();
        if (response.status === 202) this.accepted.set(id, now());
        // Behind the gateway, a connection error on its way to Herald is its 503: the error counts.
        const cut = response.headers.get(GATEWAY_ERROR_HEADER);
        this.outcomes.push({ id, sentAt, at: now(), outcome: cut ?? String(response.status) });
      })
      .catch((error: unknown) => {
        this.outcomes.push({ id, sentAt, at: now(), outcome: errorCode(error) });
      })
      .finally(() => this.#inFlight.delete(request));
    this.#inFlight.add(request);
  }
}

// ---------------------------------------------------------------------------------------------
// One fault scenario
// ---------------------------------------------------------------------------------------------

export interface FaultRow {
  fault: string;
  sent: number;
  accepted: number;
  delivered: number;
  lost: number;
  duplicated: number;
  /**
   * Later attempts of calls the receiver had answered (Herald recorded the earlier attempt as
   * failed: a timeout on a busy machine). Not duplicates: an attempt Herald saw fail is retried.
   */
  retried: number;
  /** null: not every accepted event was delivered within SETTLE_TIMEOUT_MS. */
  recoverySeconds: number | null;
  /** Everything that failed; empty when the fault passed. */
  problems: string[];
  /**
   * For a failed fault, what the store says of the events not delivered and what the load and
   * the receiver saw of them, and the fault's timeline: the assertion's message (expectPassed),
   * so that a run's summary at its end says why, not only what.
   */
  diagnosis?: string;
}

/** The fault passed; if not, its problems and diagnosis are the failure's message. */
export function expectPassed(row: FaultRow): void {
  expect(row.problems, row.diagnosis).toEqual([]);
}

export interface Infrastructure {
  postgres: PrivatePostgres;
  /** A streaming replica of `postgres`: the many-process stack's read processes read it. */
  replica?: PrivatePostgres | undefined;
  /** The Redis the processes run on (REDIS_URL, or a cluster's REDIS_CLUSTER_NODES). */
  redis: FaultRedis;
  tempDirs: string[];
}

/**
 * Which Herald processes a fault runs: `split`, one ingest and one delivery process; `many`,
 * MANY_PROCESSES behind a gateway (gateway.test-support.ts), the read processes on the replica;
 * `standalone`, the single process on its embedded PostgreSQL.
 */
export type Stack = 'split' | 'many' | 'standalone';

/** The many-process stack: processes of each kind. */
export const MANY_PROCESSES: Readonly<Record<'ingest' | 'read' | 'delivery', number>> = {
  ingest: 2,
  read: 2,
  delivery: 3,
};

/** Processes of each kind a stack runs. */
function processCounts(stack: Stack): Partial<Record<HeraldKind, number>> {
  switch (stack) {
    case 'split':
      return { ingest: 1, delivery: 1 };
    case 'many':
      return MANY_PROCESSES;
    case 'standalone':
      return { standalone: 1 };
  }
}

/** Immediate shutdown of the postmaster of a data folder's embedded PostgreSQL, if it runs. */
async function stopLeftOverPostgres(dataDir: string): Promise<void> {
  let pid: number;
  try {
    const lock = await readFile(join(dataDir, 'postgres', 'data', 'postmaster.pid'), 'utf8');
    pid = Number.parseInt(lock.split('\n')[0]!, 10);
    process.kill(pid, 'SIGQUIT');
  } catch {
    return;
  }
  await waitUntil(() => {
    try {
      process.kill(pid, 0);
      return false;
    } catch {
      return true;
    }
  }, 30_000);
}

/**
 * One fault: its own database (or data folder), Redis prefix, receiver and load; the Herald
 * processes it starts, restarts and kills; the checks made on them.
 */
export class Scenario {
  readonly tag = `f${randomHex(3)}`;
  readonly prefix = `herald_faults_${randomHex(4)}`;
  readonly token = randomHex(16);
  readonly modelId = 'fault-model';
  readonly processes: HeraldProcess[] = [];
  /** Duplicates the fault may cause (calls in flight when a process or Postgres went away). */
  allowedDuplicates = 0;
  /** Problems found by the fault's own checks (beside loss, duplicates, recovery, crashes). */
  readonly problems: string[] = [];
  faultEndAt: number | undefined;
  receiver!: Receiver;
  load!: Load;
  /** Each kind's ports, one per place (slot) in the stack. */
  readonly #ports = new Map<HeraldKind, number[]>();
  readonly #env = new Map<HeraldKind, Record<string, string>>();
  #database: string | undefined;
  #dataDir: string | undefined;
  #gateway: Gateway | undefined;
  #faultStartAt: number | undefined;
  #counter = 0;
  readonly #afterLoad: (() => void | Promise<void>)[] = [];
  readonly #timeline: string[] = [];
  readonly #createdAt = now();

  /** Retries of calls the receiver had answered whose earlier attempt Herald recorded failed. */
  #excusedRetries = 0;
  /**
   * Repeats of calls sent before the fault's end whose first sends are not in the call log: their
   * outcome died with the process or the database (checkRetries). What a crash may send again.
   */
  #lostOutcomes = 0;
  /**
   * How long the processes started after the fault's end took to listen: the machine's speed
   * (on a busy one, 10–27 s), not Herald's recovery. The recovery limit counts from the restarts'
   * end (row()).
   */
  #restartsMs = 0;
  /** Accepted events not yet delivered when the fault ended: the backlog the recovery drains. */
  #undeliveredAtFaultEnd = 0;
  /** Events accepted after the fault's end (the load's last second). */
  #acceptedAtFaultEnd = 0;

  constructor(
    readonly fault: string,
    readonly stack: Stack,
    readonly infra: Infrastructure,
    /** Settings of this fault's Herald processes beside the suite's intervals. */
    readonly settings: Readonly<Record<string, string>> = {},
  ) {}

  /** The URL clients use: ingest, the gateway, or the single process. */
  get entryUrl(): string {
    if (this.#gateway) return this.#gateway.url;
    const kind = this.stack === 'standalone' ? 'standalone' : 'ingest';
    return `http://127.0.0.1:${this.#ports.get(kind)![0]!}`;
  }

  get database(): string {
    return this.#database!;
  }

  /** Environment of a Herald process of this scenario (`database`: another one, for a rival). */
  env(kind: HeraldKind, database?: string): Record<string, string> {
    const env: Record<string, string> = {
      PATH: process.env['PATH'] ?? '',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      ...this.infra.redis.env,
      REDIS_PREFIX: this.prefix,
      HERALD_ADMIN_TOKEN: this.token,
      SSRF_ALLOW_CIDRS: '127.0.0.0/8',
      DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK: String(IN_FLIGHT_PER_WEBHOOK),
      DELIVERY_CONCURRENCY: '50',
      ...INTERVALS,
      ...this.settings,
    };
    if (kind === 'standalone') {
      env['HERALD_DATA_DIR'] = this.#dataDir!;
    } else {
      env['DATABASE_URL'] = this.infra.postgres.url(database ?? this.database);
    }
    if (kind === 'read' && this.infra.replica) {
      env['READ_DATABASE_URL'] = this.infra.replica.url(database ?? this.database);
    }
    return env;
  }

  /**
   * Starts (or restarts, on the same port and data) a Herald process and waits until it listens:
   * in the first place of its kind that no running process holds.
   */
  async start(kind: HeraldKind): Promise<HeraldProcess> {
    const held = new Set(
      this.processes.filter((p) => p.kind === kind && p.running).map((p) => p.slot),
    );
    const slots = this.#ports.get(kind)?.length ?? 0;
    let slot = 0;
    while (slot < slots - 1 && held.has(slot)) slot++;
    const child = this.spawn(kind, { slot });
    const spawnedAt = now();
    // The single process's first start makes its embedded cluster (initdb) on a busy machine.
    await child.ready(kind === 'standalone' ? 120_000 : 60_000);
    if (this.faultEndAt !== undefined && spawnedAt >= this.faultEndAt) {
      this.#restartsMs += now() - spawnedAt;
    }
    this.mark(`${child.name} listening`);
    return child;
  }

  /** Spawns a Herald process without waiting for it. */
  spawn(
    kind: HeraldKind,
    options: { env?: Record<string, string>; port?: number; slot?: number } = {},
  ) {
    const slot = options.slot ?? 0;
    let port = options.port;
    if (port === undefined) {
      port = this.#ports.get(kind)?.[slot];
      if (port === undefined) throw new Error(`no port for ${kind} #${slot}: call setUp first`);
    }
    const child = new HeraldProcess(
      `${kind}#${++this.#counter}`,
      kind,
      port,
      options.env ?? this.#env.get(kind)!,
      slot,
    );
    this.processes.push(child);
    return child;
  }

  /** The running process of a kind (the last one started). */
  running(kind: HeraldKind): HeraldProcess {
    const found = this.processes.filter((p) => p.kind === kind && p.running).at(-1);
    if (!found) throw new Error(`no ${kind} running`);
    return found;
  }

  /** kill -9 of a running process (a planned exit). */
  async kill(kind: HeraldKind): Promise<Exit> {
    const child = this.running(kind);
    const exit = await child.signal('SIGKILL', 'kill');
    this.mark(`${child.name} killed`);
    return exit;
  }

  /** A check of the fault's own, run once the load has stopped (it pushes to `problems`). */
  afterLoad(check: () => void | Promise<void>): void {
    this.#afterLoad.push(check);
  }

  /** Notes a moment of the fault (for a failure to show), with the figures so far. */
  mark(label: string): void {
    const seconds = ((now() - this.#createdAt) / 1000).toFixed(1).padStart(6);
    const figures = this.load
      ? `sent ${this.load.sent}, accepted ${this.load.accepted.size}, delivered ${this.receiver.delivered}`
      : '';
    // The clock time too: the store's summary gives clock times.
    const clock = new Date().toISOString().slice(11, 23);
    this.#timeline.push(`${seconds} s  ${clock}  ${label}${figures ? ` (${figures})` : ''}`);
  }

  get timeline(): string {
    return this.#timeline.join('\n');
  }

  /** Marks the fault's end: the recovery is measured from now. */
  faultEnded(): void {
    this.faultEndAt = now();
    this.#undeliveredAtFaultEnd = this.#undelivered();
    this.#acceptedAtFaultEnd = this.load.accepted.size;
    this.mark('fault ended');
  }

  /** Database or data folder, the processes, a model and a webhook to the receiver. */
  async setUp(): Promise<void> {
    this.receiver = await Receiver.start();
    const counts = processCounts(this.stack);
    for (const [kind, count] of Object.entries(counts) as [HeraldKind, number][]) {
      const ports: number[] = [];
      for (let i = 0; i < count; i++) ports.push(await freePort());
      this.#ports.set(kind, ports);
    }
    const startAll = (kind: HeraldKind): Promise<unknown> =>
      Promise.all(Array.from({ length: counts[kind] ?? 0 }, () => this.start(kind)));
    if (this.stack !== 'standalone') {
      this.#database = `faults_${this.tag}`;
      await this.infra.postgres.createDatabase(this.#database);
      for (const kind of Object.keys(counts) as HeraldKind[]) this.#env.set(kind, this.env(kind));
      if (this.stack === 'many') {
        this.#gateway = await Gateway.start({
          ingest: this.#ports.get('ingest')!,
          read: this.#ports.get('read')!,
        });
      }
      // Ingest and read first (every process applies the migrations, under a lock); delivery
      // once the webhook exists, so that its first index of the webhooks holds it.
      await Promise.all([startAll('ingest'), startAll('read')]);
      await this.#createModelAndWebhook();
      await startAll('delivery');
    } else {
      // An empty data folder: the first start makes the embedded PostgreSQL's cluster in it.
      const dataDir = await mkdtemp(join(tmpdir(), 'herald-faults-standalone-'));
      this.infra.tempDirs.push(dataDir);
      this.#dataDir = dataDir;
      this.#env.set('standalone', this.env('standalone'));
      await this.start('standalone');
      await this.#createModelAndWebhook();
    }
    this.load = new Load(this.entryUrl, this.token, this.tag, this.modelId, LOAD_RATE_PER_S);
  }

  async #createModelAndWebhook(): Promise<void> {
    const post = async (path: string, body: unknown, expected: number): Promise<void> => {
      const response = await fetch(`${this.entryUrl}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${this.token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const text = await response.text();
      if (response.status !== expected) {
        throw new Error(`POST ${path} answered ${response.status}: ${text.slice(0, 500)}`);
      }
    };
    await post(
      '/events',
      {
        data: {
          type: 'event',
          id: `${this.tag}-model`,
          attributes: {
            entity_type: 'item_type',
            event_type: 'create',
            entity: {
              type: 'item_type',
              id: this.modelId,
              attributes: { name: 'Fault', api_key: 'fault' },
            },
            related_entities: [
              {
                type: 'field',
                id: `${this.modelId}-title`,
                attributes: {
                  api_key: 'title',
                  field_type: 'string',
                  localized: false,
                  label: 'Title',
                  position: 0,
                },
              },
            ],
          },
        },
      },
      202,
    );
    await post(
      '/webhooks',
      {
        data: {
          type: 'webhook',
          attributes: {
            name: `faults ${this.tag}`,
            url: this.receiver.url,
            headers: {},
            events: [{ entity_type: 'item', event_types: ['create'] }],
            custom_payload: null,
            http_basic_user: null,
            http_basic_password: null,
          },
        },
      },
      201,
    );
  }

  /**
   * Starts the load and waits until deliveries keep pace with it. On a machine busy with other
   * work Herald may not keep the suite's pace: then the pace follows what it delivers (measured
   * over a few seconds, the load lowered to 70 % of it; meanwhile the load holds off while Herald
   * is more than WARM_UP_BACKLOG_S behind), until it keeps pace, or the warm-up's time is up (then
   * Herald delivers almost nothing: a failure).
   */
  async warmUp(): Promise<void> {
    this.mark('set up; load starts');
    this.load.holdWhile(() => this.#undelivered() > WARM_UP_BACKLOG_S * this.load.ratePerS);
    this.load.start();
    const deadline = now() + WARM_UP_TIMEOUT_MS;
    for (;;) {
      const steady = await waitUntil(
        () =>
          this.receiver.delivered >= WARM_UP_DELIVERIES &&
          this.#undelivered() <= this.load.ratePerS,
        Math.max(1, Math.min(WARM_UP_STEP_MS, deadline - now())),
      );
      if (steady) break;
      if (now() >= deadline) {
        throw new Error(
          `deliveries did not keep pace with the load within ${WARM_UP_TIMEOUT_MS / 1000} s, ` +
            `at ${this.load.ratePerS}/s at last, before any fault (${this.load.accepted.size} ` +
            `accepted, ${this.#undelivered()} of them not delivered)`,
        );
      }
      const from = { at: now(), delivered: this.receiver.delivered };
      await sleep(PACE_WINDOW_MS); // the measure's window
      const perS = ((this.receiver.delivered - from.delivered) * 1000) / (now() - from.at);
      const pace = Math.max(MIN_LOAD_RATE_PER_S, Math.floor(0.7 * perS));
      if (pace < this.load.ratePerS) {
        this.load.setRate(pace);
        this.mark(`Herald delivered ${perS.toFixed(1)}/s: the load goes on at ${pace}/s`);
      }
    }
    this.load.holdWhile(undefined);
    this.#faultStartAt = now();
    this.mark('deliveries keep pace; fault starts');
  }

  /**
   * Looks up, in Herald's call log, the calls the receiver saw retried after answering them: a
   * retry is excused when Herald recorded the attempt before it as failed (the receiver's answer
   * came too late on a busy machine); one whose attempts all succeeded is a real double send.
   */
  async checkRetries(): Promise<void> {
    const { retried, resent } = this.receiver.repeats();
    const attemptsOf = async (callId: string) => {
      const response = await fetch(`${this.entryUrl}/webhook_calls/${callId}/attempts`, {
        headers: { authorization: `Bearer ${this.token}` },
        signal: AbortSignal.timeout(5000),
      }).catch(() => null);
      if (response?.status !== 200) return undefined;
      return ((await response.json()) as { data: { attributes: { outcome: string } }[] }).data;
    };
    for (const { callId, requests } of retried.slice(0, 200)) {
      const data = await attemptsOf(callId);
      if (!data) continue;
      const failed = data.filter((attempt) => attempt.attributes.outcome !== 'success').length;
      this.#excusedRetries += Math.min(requests, failed);
    }
    // A call first sent before the fault's end (a crash) and received more often than its log
    // has attempts: a send whose outcome the crash lost (the request in flight, or answered but
    // its outcome not yet written), which Herald sends again, as at-least-once means. A call
    // whose every request is in its log was sent twice for another reason, and still counts.
    const crashAt = this.faultEndAt;
    if (crashAt === undefined) return;
    for (const { callId, requests, repeats, firstAt } of resent.slice(0, 200)) {
      if (firstAt > crashAt) continue;
      const data = await attemptsOf(callId);
      if (!data) continue;
      this.#lostOutcomes += Math.min(repeats, Math.max(0, requests - data.length));
    }
  }

  /**
   * After the fault: the load goes on until one second of load's events are accepted past the
   * fault's end (bounded), stops, then every accepted event must reach the receiver and Herald
   * must have no call left to send (bounded by SETTLE_TIMEOUT_MS from the fault's end).
   */
  async finish(): Promise<void> {
    if (this.faultEndAt === undefined) this.faultEnded();
    // Counted from now: whatever the fault stopped has been started again.
    const restored = now();
    const resumed = await waitUntil(
      () => this.load.acceptedSince(restored) >= this.load.ratePerS,
      30_000,
    );
    await this.load.stop();
    const refused = this.load.refusalsSince(this.#faultStartAt ?? 0);
    const gateway = this.#gateway ? `, the gateway's own 503s: ${this.#gateway.unavailable}` : '';
    this.mark(
      `load stopped; answers other than 202 since the fault: ${JSON.stringify(refused)}${gateway}`,
    );
    for (const check of this.#afterLoad) await check();
    if (!resumed) {
      this.problems.push(
        `only ${this.load.acceptedSince(restored)} events accepted in the 30 s after the restart`,
      );
    }
    await this.settle();
  }

  /**
   * Waits until every accepted event reached the receiver and Herald has no call left to send,
   * at most SETTLE_TIMEOUT_MS from the fault's end (or from now, when there was no fault). The
   * load is stopped first if it still runs (after a failure of the harness).
   */
  async settle(): Promise<void> {
    await this.load.stop();
    const from = this.faultEndAt ?? now();
    let callsLeft = Number.POSITIVE_INFINITY;
    // Besides the restarts after the fault (#restartsMs): a start is the machine's speed, as in
    // the recovery limit (row()), and the load went on meanwhile.
    const settled = await waitUntil(
      async () => this.#undelivered() === 0 && (callsLeft = await this.#callsLeft()) === 0,
      Math.max(5000, from + SETTLE_TIMEOUT_MS + this.#restartsMs - now()),
      200,
    );
    // Every event delivered, yet calls Herald still means to send: a log that lies, or a call
    // stuck (held by a process that will never attempt it) that a new event would not reveal.
    if (!settled && this.#undelivered() === 0) {
      this.problems.push(
        Number.isFinite(callsLeft)
          ? `${callsLeft} calls still pending or rescheduled ${SETTLE_TIMEOUT_MS / 1000} s after the fault, every event delivered`
          : `GET /webhook_calls kept failing ${SETTLE_TIMEOUT_MS / 1000} s after the fault`,
      );
    }
    this.mark(
      `settled (last new delivery at ${((this.receiver.lastNewAt - this.#createdAt) / 1000).toFixed(1)} s)`,
    );
  }

  #undelivered(): number {
    let count = 0;
    for (const id of this.load.accepted.keys()) if (!this.receiver.byEvent.has(id)) count++;
    return count;
  }

  /** Calls Herald still has to send (pending or rescheduled), from GET /webhook_calls. */
  async #callsLeft(): Promise<number> {
    const total = async (status?: string): Promise<number> => {
      const filter = status ? `&filter[fields][status][eq]=${status}` : '';
      const response = await fetch(`${this.entryUrl}/webhook_calls?page[limit]=1${filter}`, {
        headers: { authorization: `Bearer ${this.token}` },
        signal: AbortSignal.timeout(5000),
      });
      if (response.status !== 200) throw new Error(`GET /webhook_calls: ${response.status}`);
      return ((await response.json()) as { meta: { total_count: number } }).meta.total_count;
    };
    try {
      const [pending, rescheduled] = await Promise.all([total('pending'), total('rescheduled')]);
      return pending + rescheduled;
    } catch {
      return Number.POSITIVE_INFINITY;
    }
  }

  /** Which of these events the database holds (split stack: straight from Postgres). */
  async storedEvents(ids: readonly string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const list = ids.map((id) => `'${id.replace(/'/g, "''")}'`).join(', ');
    const out = await this.infra.postgres.psql(
      `SELECT id FROM events WHERE id IN (${list})`,
      this.database,
    );
    return new Set(out.split('\n').filter(Boolean));
  }

  /** Accepted events the receiver has not had (so far). */
  lostEvents(): string[] {
    const accepted = [...(this.load?.accepted.keys() ?? [])];
    return accepted.filter((id) => !this.receiver?.byEvent.has(id));
  }

  /**
   * What Herald's own store says, for a failing fault, straight from Postgres: counts by status,
   * each call not finished (what holds it, since when its clock runs, its last attempt), each
   * webhook's failures and circuit, the in-flight slots held in Postgres, each process's lease,
   * and what became of each `lost` event (its match, its calls, its match job in
   * Redis). The single process's embedded PostgreSQL answers only while it runs: ask before the
   * teardown.
   */
  async storeSummary(lost: readonly string[] = []): Promise<string> {
    const database = this.stack === 'standalone' ? await this.#embeddedUrl() : this.database;
    if (database === undefined) return '';
    const list = lost
      .slice(0, 10)
      .map((id) => `'${id.replace(/'/g, "''")}'`)
      .join(', ');
    const sql = `SELECT 'events unmatched: ' || (SELECT count(*) FROM events WHERE matched_at IS NULL)
      || ', calls: ' || coalesce((SELECT string_agg(status || ' ' || n, ', ')
           FROM (SELECT status, count(*) AS n FROM webhook_calls GROUP BY status) s), 'none')
      || coalesce((SELECT '; unfinished: ' || string_agg(format(
           '#%s (event %s) %s held_by=%s enqueued %s s ago, retries %s, last sent %s, status code %s',
           id, event_id, status, coalesce(held_by, '-'), round(extract(epoch FROM now() - enqueued_at)::numeric, 1),
           attempted_auto_retries_count, coalesce(last_sent_at::text, '-'),
           coalesce(response_status::text, '-')), ', ')
         FROM (SELECT * FROM webhook_calls WHERE status IN ('pending', 'rescheduled')
               ORDER BY id LIMIT 20) u), '')
      || coalesce((SELECT '; failed attempts: ' || string_agg(format('%s × %s', n, reason), ', ')
         FROM (SELECT coalesce(failure_reason, 'status ' || coalesce(response_status::text, '-')) AS reason,
                 count(*) AS n
               FROM webhook_call_attempts WHERE outcome <> 'success' GROUP BY 1 ORDER BY 2 DESC LIMIT 5) f), '')
      || coalesce((SELECT '; last sent (accepted, matched, call made, enqueued, sent; clock times): '
           || string_agg(format('event %s %s %s %s %s %s retries %s', e.id,
             to_char(e.accepted_at, 'HH24:MI:SS.MS'), to_char(e.matched_at, 'HH24:MI:SS.MS'),
             to_char(c.created_at, 'HH24:MI:SS.MS'), to_char(c.enqueued_at, 'HH24:MI:SS.MS'),
             to_char(c.last_sent_at, 'HH24:MI:SS.MS'), c.attempted_auto_retries_count), ', ')
         FROM (SELECT * FROM webhook_calls WHERE last_sent_at IS NOT NULL
               ORDER BY last_sent_at DESC LIMIT 8) c JOIN events e ON e.id = c.event_id), '')
      || coalesce((SELECT '; webhook health: ' || string_agg(format(
           '%s streak %s circuit failures %s open for %s s more, probe taken %s s ago', webhook_id,
           failure_streak, circuit_failures,
           coalesce(round(extract(epoch FROM circuit_open_until - now())::numeric, 1)::text, '-'),
           coalesce(round(extract(epoch FROM now() - circuit_probe_at)::numeric, 1)::text, '-')), ', ')
         FROM webhook_health WHERE failure_streak > 0 OR circuit_failures > 0
           OR circuit_open_until IS NOT NULL), '')
      || coalesce((SELECT '; in-flight slots (Postgres): ' || string_agg(format('%s × %s, expiring in %s–%s s',
           n, webhook_id, round(soonest::numeric, 1), round(latest::numeric, 1)), ', ')
         FROM (SELECT webhook_id, count(*) AS n, extract(epoch FROM min(expires_at) - now()) AS soonest,
                 extract(epoch FROM max(expires_at) - now()) AS latest
               FROM in_flight_slots GROUP BY webhook_id) f), '')
      || coalesce((SELECT '; leases: ' || string_agg(format('%s heartbeat %s s ago', id,
           round(extract(epoch FROM now() - heartbeat_at)::numeric, 1)), ', ')
         FROM delivery_leases), '')
      ${
        list
          ? `|| coalesce((SELECT '; not delivered: ' || string_agg(format(
           'event %s stored %s matched %s, calls [%s]', e.id, e.accepted_at, coalesce(e.matched_at::text, 'never'),
           coalesce((SELECT string_agg(format('#%s %s held_by=%s enqueued %s attempts %s failure %s',
               c.id, c.status, coalesce(c.held_by, '-'), c.enqueued_at, c.attempts_count,
               coalesce(c.failure_reason, '-')), ' | ')
             FROM webhook_calls c WHERE c.event_id = e.id), 'none')), ', ')
         FROM events e WHERE e.id IN (${list})), '; not delivered: none of them stored')`
          : ''
      }`;
    // psql's error alone: its command line holds the embedded PostgreSQL's password.
    const store = await this.infra.postgres
      .psql(sql, database)
      .catch((error: { stderr?: string }) => `psql failed: ${error.stderr ?? ''}`.trim());
    const jobs = await Promise.all(
      lost.slice(0, 10).map(async (id) => {
        const job = await this.#jobFields(`{${this.prefix}}:event-match:${eventJobId(id)}`);
        return `match job of ${id}: ${job}`;
      }),
    );
    return [store, ...jobs, ...(await this.#deliverJobs(database))].join('; ');
  }

  /**
   * A BullMQ job's hash as `field=value` (its data, options, name and stack left out): BullMQ keeps
   * attempts as `atm`/`ats`, stalls as `stc`, and the times and failure under their own names.
   */
  async #jobFields(key: string): Promise<string> {
    const answer = await this.infra.redis
      .cli('HGETALL', key)
      .catch((error: Error) => `error ${error.message}`);
    if (answer.startsWith('error ')) return answer;
    const lines = answer.split('\n');
    const fields: string[] = [];
    for (let i = 0; i + 1 < lines.length; i += 2) {
      if (!['data', 'opts', 'name', 'stacktrace'].includes(lines[i]!))
        fields.push(`${lines[i]}=${lines[i + 1]}`);
    }
    return fields.length > 0 ? fields.join(' ') : 'none';
  }

  /**
   * Where the deliver job of each unfinished call is in Redis (its hash, the lists and sets that
   * may hold it, its lock's time left) and its webhook's in-flight slots: what keeps a call whose
   * re-adds are no-ops from being sent. In Postgres-only mode, the same from the rows of BullMQ's
   * tables (#queueJobs).
   */
  async #deliverJobs(database: string): Promise<string[]> {
    if (this.settings['REDIS_URL'] === '') return this.#queueJobs(database);
    const rows = await this.infra.postgres
      .psql(
        `SELECT id || ' ' || webhook_id || ' ' || CASE WHEN status = 'rescheduled'
           THEN attempted_auto_retries_count + 1 ELSE 0 END
         FROM webhook_calls WHERE status IN ('pending', 'rescheduled') ORDER BY id LIMIT 5`,
        database,
      )
      .catch(() => '');
    const cli = (...args: string[]): Promise<string> =>
      this.infra.redis
        .cli(...args)
        .then((answer) => answer.replace(/\n/g, ' ') || '-')
        .catch((error: Error) => `error ${error.message}`);
    const queue = `{${this.prefix}}:webhook-deliver`;
    const webhooks = new Set<string>();
    const jobs = await Promise.all(
      rows
        .split('\n')
        .filter(Boolean)
        .map(async (row) => {
          const [callId = '', webhookId = '', retry = '0'] = row.split(' ');
          webhooks.add(webhookId);
          const id = deliverJobId(callId, Number(retry) || undefined);
          const [hash, wait, active, delayed, prioritized, lock] = await Promise.all([
            this.#jobFields(`${queue}:${id}`),
            cli('LPOS', `${queue}:wait`, id),
            cli('LPOS', `${queue}:active`, id),
            cli('ZSCORE', `${queue}:delayed`, id),
            cli('ZSCORE', `${queue}:prioritized`, id),
            cli('PTTL', `${queue}:${id}:lock`),
          ]);
          return `deliver job ${id}: [${hash}] wait ${wait} active ${active} delayed ${delayed} prioritized ${prioritized} lock ttl ${lock}`;
        }),
    );
    const slots = await Promise.all(
      [...webhooks].map(
        async (id) =>
          `in-flight of ${id}: ${await cli('ZRANGE', `${this.prefix}:in-flight:{${id}}`, '0', '-1', 'WITHSCORES')}`,
      ),
    );
    return rows ? [...jobs, ...slots, `redis time ${await cli('TIME')}`] : [];
  }

  /**
   * Postgres-only mode: the rows of BullMQ's `job` table (in the queues' schema) of the unfinished
   * calls' deliver jobs and of the event-match jobs not finished, and the queues' connections
   * (a worker's LISTEN connection is named `<queue>:w:<name>`): a job that sits in a state no
   * worker takes, or a worker no longer listening, is what keeps re-adds from being sent.
   */
  async #queueJobs(database: string): Promise<string[]> {
    const schema = `${this.prefix}_queues`;
    const sql = `SELECT coalesce((SELECT string_agg(format('%s job %s: %s attempts %s stalled %s%s lock %s ms deferred %s process at %s ms',
           j.queue, j.id, j.state, j.attempts_made, j.stalled_count, CASE WHEN j.stalled_marked THEN ' (marked)' ELSE '' END,
           coalesce((j.locked_until_ms - (extract(epoch FROM clock_timestamp()) * 1000)::bigint)::text, '-'),
           coalesce(j.deferred_failure, '-'),
           coalesce((j.process_at_ms - (extract(epoch FROM clock_timestamp()) * 1000)::bigint)::text, '-')), '; ')
         FROM (SELECT * FROM "${schema}".job WHERE state NOT IN ('completed', 'failed')
                 OR (id LIKE 'call-%' AND split_part(id, '-', 2) IN (SELECT id::text FROM webhook_calls
                       WHERE status IN ('pending', 'rescheduled')))
               ORDER BY added_at_ms LIMIT 12) j), 'no unfinished jobs')
      || '; jobs by queue and state: ' || coalesce((SELECT string_agg(format('%s %s %s', queue, state, n), ', ')
         FROM (SELECT queue, state, count(*) AS n FROM "${schema}".job GROUP BY 1, 2) c), 'none')
      || '; connections: ' || coalesce((SELECT string_agg(format('%s × %s %s%s', n, application_name, state,
           coalesce(' ' || wait_event, '')), ', ')
         FROM (SELECT application_name, state, wait_event, count(*) AS n FROM pg_stat_activity
               WHERE datname = current_database() AND pid <> pg_backend_pid() GROUP BY 1, 2, 3) a), 'none')`;
    const out = await this.infra.postgres
      .psql(sql, database)
      .catch((error: { stderr?: string }) => `psql failed: ${error.stderr ?? ''}`.trim());
    return [`queues: ${out}`];
  }

  /** The running embedded PostgreSQL's URL (the single process's), if it runs. */
  async #embeddedUrl(): Promise<string | undefined> {
    if (!this.#dataDir) return undefined;
    return readFile(join(this.#dataDir, 'postgres', 'url'), 'utf8').then(
      (url) => url.trim(),
      () => undefined,
    );
  }

  /**
   * Stops every process still running with SIGTERM and records, as problems, any process that
   * ended without the harness asking, or did not stop cleanly (code 0) when asked.
   */
  async tearDown(): Promise<string[]> {
    const crashes: string[] = [];
    for (const child of this.processes) {
      if (child.exit && !child.planned) {
        crashes.push(`${child.name} exited unasked (${describeExit(child.exit)})`);
      }
    }
    await Promise.all(
      this.processes
        .filter((child) => child.running)
        .map(async (child) => {
          const exit = await child.signal('SIGTERM', 'stop');
          if (exit.code !== 0) {
            crashes.push(`${child.name} ended with ${describeExit(exit)} on SIGTERM`);
          }
        }),
    );
    await this.load?.stop();
    await this.receiver?.close();
    await this.#gateway?.close();
    // The single process stops its embedded PostgreSQL; one a killed process left running (a
    // fault that failed before its restart) is stopped here, before its folder is deleted.
    if (this.#dataDir) await stopLeftOverPostgres(this.#dataDir);
    this.#saveLogs();
    return crashes;
  }

  /** Every process's whole output, under .ci/out/faults/ (gitignored), for a closer look. */
  #saveLogs(): void {
    const dir = join(OUT_DIR, 'faults');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `${this.fault.replace(/[^a-z0-9]+/gi, '-')}.timeline`), this.timeline);
    for (const child of this.processes) {
      const name = `${this.fault.replace(/[^a-z0-9]+/gi, '-')}.${child.name.replace('#', '-')}.log`;
      writeFileSync(join(dir, name), child.output);
    }
  }

  /** The figures of this fault, once it is over. */
  row(crashes: string[], error?: unknown): FaultRow {
    const accepted = this.load?.accepted ?? new Map<string, number>();
    let delivered = 0;
    for (const id of accepted.keys()) if (this.receiver?.byEvent.has(id)) delivered++;
    const lost = accepted.size - delivered;
    // Requests beyond the first for an event: an attempt sent again, a retry of an attempt
    // Herald had not recorded as failed, or the event sent again under a second webhook-id (a
    // second call of the same event and webhook).
    const repeats = this.receiver?.repeats() ?? { repeated: 0, retried: [] };
    const retried = repeats.retried.reduce((sum, call) => sum + call.requests, 0);
    // Only a fault that may cut work in flight (a crash: allowedDuplicates) may lose outcomes.
    const lostOutcomes = this.allowedDuplicates > 0 ? this.#lostOutcomes : 0;
    if (lostOutcomes > 0) {
      this.mark(
        `${lostOutcomes} calls sent again whose first send's outcome the fault lost ` +
          '(received, not in the call log): not counted as duplicates',
      );
    }
    const duplicated = this.receiver
      ? repeats.repeated -
        lostOutcomes +
        (retried - this.#excusedRetries) +
        (this.receiver.delivered - this.receiver.byEvent.size)
      : 0;
    const faultEnd = this.faultEndAt;
    const recoverySeconds =
      lost === 0 && faultEnd !== undefined && this.receiver
        ? Math.max(0, this.receiver.lastNewAt - faultEnd) / 1000
        : null;
    const problems = [...this.problems];
    if (error !== undefined) {
      problems.unshift(
        `harness: ${error instanceof Error ? error.message : JSON.stringify(error)}`,
      );
    }
    if (lost > 0) problems.push(`${lost} accepted events not delivered`);
    // A process that stalled (STALL_SIGNS) was, for the others, a process gone: what it had in
    // flight may be sent again, as after a kill -9; after the fault's end (and a grace for what
    // the fault itself left), its takeover's timers are a second fault's recovery.
    const stalls = this.processes.flatMap((p) => p.stalls.map((at) => ({ name: p.name, at })));
    const stalledAfter = stalls.find((s) => faultEnd !== undefined && s.at > faultEnd + 2000);
    const allowed =
      stalls.length > 0
        ? Math.max(this.allowedDuplicates, IN_FLIGHT_PER_WEBHOOK)
        : this.allowedDuplicates;
    if (stalls.length > 0) {
      const names = [...new Set(stalls.map((s) => s.name))].join(', ');
      this.mark(
        `${names} stalled (lease or job lock not renewed in time) ${stalls.length} times, ` +
          `the first at ${((Math.min(...stalls.map((s) => s.at)) - this.#createdAt) / 1000).toFixed(1)} s`,
      );
    }
    if (duplicated > allowed) {
      problems.push(`${duplicated} duplicates (at most ${allowed} allowed)`);
    }
    const doubled = [...(this.receiver?.byEvent.values() ?? [])].filter((ids) => ids.size > 1);
    if (doubled.length > 0) {
      problems.push(
        `${doubled.length} events delivered under two webhook-ids (a receiver that ` +
          'deduplicates by webhook-id takes them twice)',
      );
    }
    const restartsS = this.#restartsMs / 1000;
    // The backlog left at the fault's end, and the load's events accepted after it, take their
    // time to deliver at the pace Herald kept before the fault (the load's, which the warm-up
    // lowers to 70 % of what Herald delivers on a busy machine): that is the machine's speed, not
    // a recovery's delay, and comes on top of the limit.
    const backlog = this.#undeliveredAtFaultEnd + (accepted.size - this.#acceptedAtFaultEnd);
    const drainS = this.load ? backlog / this.load.ratePerS : 0;
    const limitS = RECOVERY_LIMIT_S + drainS + (stalledAfter ? STALL_TAKEOVER_S : 0);
    if (recoverySeconds !== null && recoverySeconds - restartsS > limitS) {
      problems.push(
        `recovery took ${recoverySeconds.toFixed(1)} s, ${restartsS.toFixed(1)} s of it restarting ` +
          `(limit ${limitS.toFixed(1)} s besides the restarts: ${RECOVERY_LIMIT_S} s, ` +
          `${drainS.toFixed(1)} s to deliver ${backlog} events left at the fault's end at ` +
          `${this.load?.ratePerS ?? 0}/s${stalledAfter ? `, ${STALL_TAKEOVER_S} s as a process stalled after the fault` : ''})`,
      );
    }
    problems.push(...crashes);
    return {
      fault: this.fault,
      sent: this.load?.sent ?? 0,
      accepted: accepted.size,
      delivered,
      lost,
      duplicated,
      retried: this.#excusedRetries,
      recoverySeconds,
      problems,
    };
  }
}

// ---------------------------------------------------------------------------------------------
// The table
// ---------------------------------------------------------------------------------------------

const HEADERS = [
  'fault',
  'sent',
  'accepted',
  'delivered',
  'lost',
  'duplicated',
  'retried',
  's to recover',
  'result',
];

/** The rows as a Markdown table, padded so that it also reads as fixed-width text. */
export function formatTable(rows: readonly FaultRow[]): string {
  const cells = rows.map((row) => [
    row.fault,
    String(row.sent),
    String(row.accepted),
    String(row.delivered),
    String(row.lost),
    String(row.duplicated),
    String(row.retried),
    row.recoverySeconds === null ? `> ${SETTLE_TIMEOUT_MS / 1000}` : row.recoverySeconds.toFixed(1),
    row.problems.length === 0 ? 'pass' : 'FAIL',
  ]);
  const widths = HEADERS.map((header, i) =>
    Math.max(header.length, ...cells.map((line) => line[i]!.length)),
  );
  const line = (values: string[]): string =>
    `| ${values.map((value, i) => (i === 0 ? value.padEnd(widths[i]!) : value.padStart(widths[i]!))).join(' | ')} |`;
  const rule = `|${widths.map((width, i) => (i === 0 ? '-'.repeat(width + 2) : `${'-'.repeat(width + 1)}:`)).join('|')}|`;
  const notes = rows
    .filter((row) => row.problems.length > 0)
    .map((row) => `- ${row.fault}: ${row.problems.join('; ')}`);
  return [line(HEADERS), rule, ...cells.map(line), ...(notes.length ? ['', ...notes] : [])].join(
    '\n',
  );
}

/**
 * Runs one fault from a fresh start to the checks: set up, steady load, `inject` (which injects
 * the fault, ends it and calls faultEnded()), the load's end, every accepted event delivered,
 * every process stopped. Pushes the fault's row to `rows` whatever happens, and returns it.
 */
export async function runFault(
  rows: FaultRow[],
  infra: Infrastructure,
  fault: string,
  stack: Stack,
  inject: (scenario: Scenario) => Promise<void>,
  /** Settings of this fault's Herald processes beside the suite's intervals. */
  settings: Readonly<Record<string, string>> = {},
): Promise<FaultRow> {
  const scenario = new Scenario(fault, stack, infra, settings);
  let error: unknown;
  try {
    await scenario.setUp();
    await scenario.warmUp();
    await inject(scenario);
    await scenario.finish();
  } catch (caught) {
    error = caught;
    // What was accepted is still owed: lost means not delivered in time, even here.
    if (scenario.load) await scenario.settle().catch(() => undefined);
  }
  if (scenario.receiver) await scenario.checkRetries().catch(() => undefined);
  // Asked before the teardown, which stops the single process's embedded PostgreSQL.
  const lost = scenario.lostEvents();
  const lostStore = lost.length > 0 ? await scenario.storeSummary(lost) : undefined;
  const crashes = await scenario.tearDown();
  const row = scenario.row(crashes, error);
  rows.push(row);
  if (row.problems.length > 0) {
    const store = lostStore ?? (await scenario.storeSummary());
    // What the load and the receiver saw of the events whose calls are not finished.
    const seen = [...store.matchAll(/\(event (\S+)\)/g)].map(([, id]) => {
      const webhookIds = [...(scenario.receiver?.byEvent.get(id!) ?? [])];
      const accepted = scenario.load?.accepted.has(id!) ? 'accepted' : 'not accepted (no 202)';
      return `event ${id}: ${accepted}, received under webhook-ids [${webhookIds.join(', ')}]`;
    });
    row.diagnosis = [...(store ? [`store: ${store}`, ...seen] : []), scenario.timeline].join('\n');
    console.log(
      [
        `${fault}: ${row.problems.join('; ')}`,
        scenario.timeline,
        ...(store ? [`store: ${store}`, ...seen] : []),
        ...scenario.processes.map(
          (child) =>
            `--- ${child.name} (${child.exit ? describeExit(child.exit) : 'running'}), warnings and errors:\n${child.digest()}`,
        ),
      ].join('\n'),
    );
  }
  return row;
}
