/**
 * Flow control's speed targets (issue #15 items 1–3), printed by bench:delivery after its other
 * rows (or alone: FLOW_ONLY=1 / --flow), each beside a baseline measured in the same run, the
 * workers in the bench process (npm start's shape), with the production defaults:
 *
 * - ordered: FLOW_EVENTS update events (6,000) of FLOW_ENTITIES records (1,000; each record's
 *   versions in order, the records shuffled with a fixed seed) posted as the other rows post
 *   theirs, to one webhook with delivery_order per_entity; baseline: the same stream to one
 *   webhook with `any`, and raw undici to the same receiver. Then the same over 50 webhooks of
 *   each kind (the records spread over 50 models, as the "1 webhook per event" rows), where a
 *   webhook's in-flight limit is not what sets the pace.
 * - coalescing: COALESCE_ENTITIES × COALESCE_UPDATES updates (100 × 100) posted as fast as
 *   possible to a webhook with coalesce_events and per_entity whose receiver answers after
 *   SLOW_MS (200): interleaved (every record's version 1, then every record's version 2…: each
 *   record's updates span the whole publish) and grouped (each record's updates back to back).
 *   Baseline: the first COALESCE_BASELINE_UPDATES versions (5) of the interleaved stream to such a
 *   webhook without coalesce (one call per event: the whole stream would take ~20× as long).
 * - batching: one POST /events of BATCH_RECORDS publish events (1,000 records) to a webhook with
 *   batch {window_ms: BATCH_WINDOW_MS (1000), max_events: 1000}; baseline: the same publish to a
 *   webhook without batch.
 *
 * The receiver tallies what each row's path got (calls, events listed, each record's versions in
 * their order of arrival), so each row checks what was delivered, not only how fast.
 *
 * FLOW_ROWS=ordered,coalesce,batch picks sections. Where the time goes, for the ordered and
 * unordered rows: BENCH_CPU_PROF=<folder> profiles this process (ingest and workers), writes the
 * profiles there and sums them up; BENCH_SQL_TIMINGS=1 times the workers' statements and samples
 * what Herald's Postgres backends do (bench/lib/sql-timings.ts, pg-activity.ts).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Metrics } from '@herald/runtime';
import { insertWebhook, type Db } from '@herald/store';
import { CpuProfiler, profileTable } from '../lib/cpu-profile.js';
import { backendPids, cpuPer, sampleCpu, type CpuSample } from '../lib/cpu.js';
import { sampleActivity } from '../lib/pg-activity.js';
import type { SqlTimings } from '../lib/sql-timings.js';
import { table } from '../lib/table.js';
import { baseline, type FlowTally, type ReceiverProcess } from '../lib/receiver-process.js';
import { itemEvent, itemWebhook, modelEvent, postEvents, postInBatches } from './fixtures.js';

const FLOW_EVENTS = Number(process.env['FLOW_EVENTS'] ?? 6000);
const FLOW_ENTITIES = Number(process.env['FLOW_ENTITIES'] ?? 1000);
const COALESCE_ENTITIES = Number(process.env['COALESCE_ENTITIES'] ?? 100);
const COALESCE_UPDATES = Number(process.env['COALESCE_UPDATES'] ?? 100);
const COALESCE_BASELINE_UPDATES = Number(process.env['COALESCE_BASELINE_UPDATES'] ?? 5);
const SLOW_MS = Number(process.env['SLOW_MS'] ?? 200);
const BATCH_RECORDS = Number(process.env['BATCH_RECORDS'] ?? 1000);
const BATCH_WINDOW_MS = Number(process.env['BATCH_WINDOW_MS'] ?? 1000);
/** Where to write CPU profiles of the ordered and unordered rows; unset: no profiling. */
const PROFILE_DIR = process.env['BENCH_CPU_PROF'];
/** Webhooks of each kind in the spread ordered / unordered pair. */
const SPREAD = 50;

/**
 * The flow rows' webhooks: `webhooks` of them, filtered on models first… first + webhooks - 1
 * (model-<n>), a record going to model first + (its number % webhooks). All of one row share
 * the receiver's path /flow/<row>.
 */
const HOOKS = {
  any: { model: 100, webhooks: 1, eventType: 'update' },
  ordered: { model: 101, webhooks: 1, eventType: 'update' },
  coalesce: { model: 102, webhooks: 1, eventType: 'update' },
  sequential: { model: 103, webhooks: 1, eventType: 'update' },
  batch: { model: 104, webhooks: 1, eventType: 'publish' },
  unbatched: { model: 105, webhooks: 1, eventType: 'publish' },
  anySpread: { model: 200, webhooks: SPREAD, eventType: 'update' },
  orderedSpread: { model: 300, webhooks: SPREAD, eventType: 'update' },
} as const;
type Hook = keyof typeof HOOKS;
const PER_ENTITY: readonly Hook[] = ['ordered', 'coalesce', 'sequential', 'orderedSpread'];
const SLOW: readonly Hook[] = ['coalesce', 'sequential'];

const pathOf = (hook: Hook) => `/flow/${hook}`;
const modelOf = (hook: Hook, record: number) => HOOKS[hook].model + (record % HOOKS[hook].webhooks);

/** What the flow rows run against (bench/delivery/run.ts sets it up). */
export interface FlowHarness {
  db: Db;
  schema: string;
  receiver: ReceiverProcess;
  heraldUrl: string;
  token: string;
  /** The registry the in-process workers count in (herald_flow_*). */
  registry: Metrics['registry'];
  connectionsPerOrigin: number;
  maxInFlightPerWebhook: number;
  /** Events per POST /events (the other rows' BATCH). */
  batch: number;
  /** The workers' statements, timed (BENCH_SQL_TIMINGS=1): printed for the ordered rows. */
  sqlTimings?: SqlTimings;
}

/** Each row's webhook ids. */
export type FlowWebhooks = Map<Hook, string[]>;

/** The harness and the flow webhooks. */
type FlowRun = FlowHarness & { ids: FlowWebhooks };

/** Posts the flow models and stores the flow webhooks (before the workers start). */
export async function prepareFlow(h: FlowHarness): Promise<FlowWebhooks> {
  const ids: FlowWebhooks = new Map();
  for (const hook of Object.keys(HOOKS) as Hook[]) {
    const { model: first, webhooks, eventType } = HOOKS[hook];
    const models = Array.from({ length: webhooks }, (_, i) => first + i);
    await postEvents(h.heraldUrl, h.token, models.map(modelEvent));
    const slow = SLOW.includes(hook);
    const list: string[] = [];
    for (const model of models) {
      const input = {
        ...itemWebhook('', `flow-${hook}-${model}`, [eventType], model),
        url: `${h.receiver.url}${pathOf(hook)}${slow ? `?delay_ms=${SLOW_MS}` : ''}`,
        deliveryOrder: PER_ENTITY.includes(hook) ? ('per_entity' as const) : ('any' as const),
        coalesceEvents: hook === 'coalesce',
        batch: hook === 'batch' ? { window_ms: BATCH_WINDOW_MS, max_events: 1000 } : null,
      };
      list.push((await insertWebhook(h.db, input)).id);
    }
    ids.set(hook, list);
  }
  return ids;
}

/** A fixed-seed generator (mulberry32): the same shuffled stream in every run. */
function seeded(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type StreamOrder = 'shuffled' | 'interleaved' | 'grouped';

/**
 * `perEntity` versions of each of `entities` records (`${prefix}-<n>`), each record's versions
 * in order (occurred_at rising with the stream): shuffled, interleaved (every record's version 1,
 * then every record's version 2…) or grouped (each record's versions back to back).
 */
function versionStream(
  hook: Hook,
  prefix: string,
  entities: number,
  perEntity: number,
  order: StreamOrder,
) {
  const slots: number[] = [];
  if (order === 'grouped') {
    for (let e = 0; e < entities; e++) for (let v = 0; v < perEntity; v++) slots.push(e);
  } else {
    for (let v = 0; v < perEntity; v++) for (let e = 0; e < entities; e++) slots.push(e);
  }
  if (order === 'shuffled') {
    const random = seeded(15);
    for (let i = slots.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [slots[i], slots[j]] = [slots[j]!, slots[i]!];
    }
  }
  const versions = new Array<number>(entities).fill(0);
  const start = Date.now() - slots.length - 1000;
  const { eventType } = HOOKS[hook];
  return slots.map((e, i) =>
    itemEvent(eventType, modelOf(hook, e), `${prefix}-${e}`, {
      n: ++versions[e]!,
      at: new Date(start + i),
    }),
  );
}

const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Counter values by label (herald_flow_events_total{placement}, herald_flow_claims_total{state}). */
async function counts(h: FlowHarness, name: string): Promise<Map<string, number>> {
  const metric = h.registry.getSingleMetric(name);
  const values = new Map<string, number>();
  if (!metric) return values;
  for (const { labels, value } of (await metric.get()).values) {
    const label = String(Object.values(labels)[0] ?? '');
    values.set(label, (values.get(label) ?? 0) + value);
  }
  return values;
}

interface FlowCounts {
  placement: Map<string, number>;
  claims: Map<string, number>;
}

const flowCounts = async (h: FlowHarness): Promise<FlowCounts> => ({
  placement: await counts(h, 'herald_flow_events_total'),
  claims: await counts(h, 'herald_flow_claims_total'),
});

function countsSince(before: FlowCounts, after: FlowCounts): FlowCounts {
  const diff = (a: Map<string, number>, b: Map<string, number>) => {
    const changed = new Map<string, number>();
    for (const [label, value] of b) {
      const delta = value - (a.get(label) ?? 0);
      if (delta !== 0) changed.set(label, delta);
    }
    return changed;
  };
  return {
    placement: diff(before.placement, after.placement),
    claims: diff(before.claims, after.claims),
  };
}

const describeCounts = (c: FlowCounts): string => {
  const list = (m: Map<string, number>) =>
    m.size === 0 ? 'none' : [...m].map(([k, v]) => `${k} ${v}`).join(', ');
  return `herald_flow_events_total: ${list(c.placement)}; herald_flow_claims_total: ${list(c.claims)}`;
};

/** Waits until none of the row's calls is pending and every event is matched (untimed). */
async function settle(h: FlowRun, hook: Hook): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const { rows } = await h.db.query<{ busy: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM events WHERE matched_at IS NULL)
         OR EXISTS (SELECT 1 FROM webhook_calls WHERE webhook_id = ANY($1::bigint[])
           AND status IN ('pending', 'rescheduled')) AS busy`,
      [h.ids.get(hook)],
    );
    if (!rows[0]?.busy) return;
    if (Date.now() > deadline) throw new Error(`${hook}: calls still pending after 120 s`);
    await sleep(50);
  }
}

/** The lanes of a row's first unfinished calls, for the message of a row that did not finish. */
async function unfinished(h: FlowRun, hook: Hook): Promise<string> {
  const { rows } = await h.db.query(
    `SELECT id, lane, status, attempts_count, enqueued_at = 'infinity' AS parked,
       claimed_at, held_by, event_ids, lane_at, lane_version, lane_seq, due_at, failure_reason,
       created_at, last_sent_at
     FROM webhook_calls c WHERE webhook_id = ANY($1::bigint[]) AND lane IN (
       SELECT lane FROM webhook_calls WHERE webhook_id = ANY($1::bigint[])
         AND status <> 'success' LIMIT 5)
     ORDER BY lane, lane_at, lane_version, lane_seq, id`,
    [h.ids.get(hook)],
  );
  return JSON.stringify(rows, null, 1);
}

/** Polls the receiver's tally of `hook` until `done` says so; throws after `timeoutMs`. */
async function waitForTally(
  h: FlowRun,
  hook: Hook,
  done: (tally: FlowTally) => boolean | Promise<boolean>,
  timeoutMs: number,
  final?: number,
): Promise<FlowTally> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const tally = await h.receiver.flow(pathOf(hook), final);
    if (await done(tally)) return tally;
    if (Date.now() > deadline) {
      throw new Error(
        `${pathOf(hook)}: ${tally.calls} calls, ${tally.events} events after ${timeoutMs} ms; ` +
          `the lanes of its first unfinished calls: ${await unfinished(h, hook)}`,
      );
    }
    await sleep(20);
  }
}

const quantile = (values: number[], q: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
};
const p50p99 = (values: number[]) =>
  `${quantile(values, 0.5).toFixed(1)} / ${quantile(values, 0.99).toFixed(1)}`;

/** Where a row's delivered calls spent their time (ms): accepted → call created → sent. */
async function stages(h: FlowRun, hook: Hook) {
  const { rows } = await h.db.query<{ matched: number; sent: number }>(
    `SELECT extract(epoch FROM c.created_at - e.accepted_at) * 1000 AS matched,
       extract(epoch FROM c.last_sent_at - c.created_at) * 1000 AS sent
     FROM webhook_calls c JOIN events e ON e.id = c.event_id
     WHERE c.webhook_id = ANY($1::bigint[]) AND c.status = 'success'`,
    [h.ids.get(hook)],
  );
  return {
    matched: p50p99(rows.map((r) => Number(r.matched))),
    sent: p50p99(rows.map((r) => Number(r.sent))),
  };
}

/** The calls of a row's records (`${prefix}-…`) by outcome, and the events those sent carried. */
async function callsOf(h: FlowRun, hook: Hook, prefix: string) {
  const { rows } = await h.db.query<{ success: string; failed: string; carried: string | null }>(
    `SELECT count(*) FILTER (WHERE status = 'success') AS success,
       count(*) FILTER (WHERE status = 'failed') AS failed,
       sum(coalesce(cardinality(event_ids), 1)) FILTER (WHERE status = 'success') AS carried
     FROM webhook_calls WHERE webhook_id = ANY($1::bigint[]) AND lane LIKE $2`,
    [h.ids.get(hook), `item:${prefix}-%`],
  );
  const row = rows[0]!;
  return {
    success: Number(row.success),
    failed: Number(row.failed),
    carried: Number(row.carried ?? 0),
  };
}

/**
 * Why a coalescing row made the calls it made: how long each record's updates kept coming
 * (first to last accepted), the time between two sends of a record's calls, and how many calls
 * the records had.
 */
async function coalesceAnalysis(h: FlowRun, hook: Hook, prefix: string) {
  const { rows: spans } = await h.db.query<{ span: number }>(
    `SELECT extract(epoch FROM max(accepted_at) - min(accepted_at)) * 1000 AS span
     FROM events WHERE entity_id LIKE $1 GROUP BY entity_id`,
    [`${prefix}-%`],
  );
  const { rows: sends } = await h.db.query<{ lane: string; sent: Date }>(
    `SELECT lane, last_sent_at AS sent FROM webhook_calls
     WHERE webhook_id = ANY($1::bigint[]) AND status = 'success' AND lane LIKE $2
     ORDER BY lane, last_sent_at`,
    [h.ids.get(hook), `item:${prefix}-%`],
  );
  const gaps: number[] = [];
  const perLane = new Map<string, number>();
  sends.forEach((row, i) => {
    perLane.set(row.lane, (perLane.get(row.lane) ?? 0) + 1);
    const previous = sends[i - 1];
    if (previous?.lane === row.lane) gaps.push(row.sent.getTime() - previous.sent.getTime());
  });
  const buckets: [string, (n: number) => boolean][] = [
    ['1', (n) => n === 1],
    ['2', (n) => n === 2],
    ['3–5', (n) => n >= 3 && n <= 5],
    ['6–10', (n) => n >= 6 && n <= 10],
    ['> 10', (n) => n > 10],
  ];
  const calls = [...perLane.values()];
  const histogram = buckets
    .map(([name, test]) => `${name}: ${calls.filter(test).length}`)
    .join(', ');
  return {
    span: p50p99(spans.map((r) => Number(r.span))),
    gap: gaps.length === 0 ? '–' : `${p50p99(gaps)} (min ${Math.min(...gaps).toFixed(0)})`,
    histogram,
  };
}

interface Sample {
  cpu: CpuSample;
  flow: FlowCounts;
}

/** Samples CPU (this process, the schema's backends, redis, the receiver) and the flow counters. */
async function startSample(h: FlowHarness): Promise<Sample> {
  const backends = await backendPids(h.db, h.schema);
  return { cpu: sampleCpu([h.receiver.pid], backends), flow: await flowCounts(h) };
}

async function endSample(h: FlowHarness, start: Sample, units: number) {
  const pids = [...start.cpu.postgresByPid.keys()];
  const cpu = cpuPer(start.cpu, sampleCpu([h.receiver.pid], pids), units);
  return { cpu, flow: countsSince(start.flow, await flowCounts(h)) };
}

const cpuCells = (c: CpuSample) =>
  [c.bench, c.postgres, c.redis, c.children].map((v) => v.toFixed(0)).join(' / ');

/**
 * One stream of `events` to `hook`, all delivered (or superseded), timed from the first POST to
 * the last arrival. `profile`: a CPU profile of this process over the run, written there.
 */
async function streamRun(h: FlowRun, hook: Hook, events: unknown[], profile?: string) {
  await h.receiver.flowReset(pathOf(hook));
  const profiler = profile ? new CpuProfiler() : undefined;
  await profiler?.start();
  const start = await startSample(h);
  h.sqlTimings?.reset();
  const activity = h.sqlTimings ? sampleActivity(h.db, h.schema) : undefined;
  const started = now();
  const retried = { count: 0 };
  await postInBatches(h.heraldUrl, h.token, events, h.batch, retried);
  const posted = (now() - started) / 1000;
  const superseded = async () =>
    (await counts(h, 'herald_flow_events_total')).get('superseded') ?? 0;
  const before = start.flow.placement.get('superseded') ?? 0;
  const tally = await waitForTally(
    h,
    hook,
    async (t) => t.calls + (await superseded()) - before >= events.length,
    180_000,
  );
  const seconds = (tally.lastAt - started) / 1000;
  const sample = await endSample(h, start, tally.calls / 1000);
  const summary = profile ? await profiler!.stop(profile) : undefined;
  const states = await activity?.stop();
  await settle(h, hook);
  return {
    events: events.length,
    posted,
    seconds,
    tally,
    rate: tally.calls / seconds,
    superseded: sample.flow.placement.get('superseded') ?? 0,
    retried: retried.count,
    ...sample,
    stages: await stages(h, hook),
    profile: summary && profileTable(summary, tally.calls, 'delivery'),
    sql:
      h.sqlTimings &&
      `${h.sqlTimings.table(tally.calls / 1000, '1000 deliveries')}\n` +
        table(
          ["Herald's backends (pg_stat_activity every 20 ms; running: on a CPU)", 'mean backends'],
          states!
            .filter((s) => s.mean >= 0.02)
            .map((s) => [s.what.replace(/\|/g, '\\|'), s.mean.toFixed(2)]),
        ),
  };
}

/** One publish of BATCH_RECORDS new records to `hook` (1000 events a POST, the API's most). */
async function publishRun(h: FlowRun, hook: Hook, prefix: string) {
  await h.receiver.flowReset(pathOf(hook));
  const events = Array.from({ length: BATCH_RECORDS }, (_, i) =>
    itemEvent('publish', modelOf(hook, i), `${prefix}-${i}`),
  );
  const start = await startSample(h);
  const started = now();
  for (let i = 0; i < events.length; i += 1000) {
    await postEvents(h.heraldUrl, h.token, events.slice(i, i + 1000));
  }
  const accepted = now() - started;
  const tally = await waitForTally(h, hook, (t) => t.events >= events.length, 120_000);
  const sample = await endSample(h, start, events.length / 1000);
  await settle(h, hook);
  // Read again once every call is finished: a call arriving after the last event would show.
  const final = await h.receiver.flow(pathOf(hook));
  return { accepted, latency: tally.lastAt - started, tally: final, ...sample };
}

/** COALESCE_ENTITIES records' `updates` versions to `hook` (slow receiver), until each's last. */
async function coalesceRun(
  h: FlowRun,
  hook: Hook,
  prefix: string,
  updates: number,
  order: StreamOrder,
) {
  await h.receiver.flowReset(pathOf(hook));
  const events = versionStream(hook, prefix, COALESCE_ENTITIES, updates, order);
  const start = await startSample(h);
  const started = now();
  const retried = { count: 0 };
  await postInBatches(h.heraldUrl, h.token, events, h.batch, retried);
  const posted = (now() - started) / 1000;
  // Done when every record's latest arrival is its last version (one later would be a bug).
  const done = (t: FlowTally) => t.entities === COALESCE_ENTITIES && t.atFinal === t.entities;
  await waitForTally(h, hook, done, 300_000, updates);
  const sample = await endSample(h, start, events.length / 1000);
  await settle(h, hook);
  const tally = await h.receiver.flow(pathOf(hook), updates);
  return {
    events: events.length,
    updates,
    order,
    retried: retried.count,
    posted,
    seconds: (tally.lastAt - started) / 1000,
    tally,
    ...sample,
    calls: await callsOf(h, hook, prefix),
    why: await coalesceAnalysis(h, hook, prefix),
  };
}

const pass = (ok: boolean) => (ok ? 'PASS' : 'FAIL');
/** A row's "all accepted" cell: seconds, and the POSTs sent again after a 500 (ingest deadlock). */
const accepted = (r: { posted: number; retried: number }) =>
  `${r.posted.toFixed(2)}${r.retried ? ` (${r.retried} POSTs retried after a 500)` : ''}`;
const log = (line: string) => process.stdout.write(`flow: ${line}\n`);

/** A section's lines: its table and notes, and its rows of the targets' table. */
interface Section {
  lines: string[];
  targets: string[];
}

const profileOf = (hook: Hook) =>
  PROFILE_DIR ? join(PROFILE_DIR, `delivery-flow-${hook}.cpuprofile`) : undefined;

/** Ordered vs unordered, on one webhook each, then on SPREAD each; raw undici beside them. */
async function orderedSection(h: FlowRun): Promise<Section> {
  log('warming up…');
  for (const hook of ['anySpread', 'orderedSpread'] as const) {
    await streamRun(h, hook, versionStream(hook, `warm-${hook}`, 200, 5, 'shuffled'));
  }
  for (const hook of ['any', 'ordered'] as const) {
    await streamRun(h, hook, versionStream(hook, `warm-${hook}`, 100, 2, 'shuffled'));
  }
  const bodyBytes = (await h.receiver.stats()).bytes;
  log('raw undici…');
  await baseline(h.receiver.url, bodyBytes, h.connectionsPerOrigin, 2000);
  const raw = await baseline(h.receiver.url, bodyBytes, h.connectionsPerOrigin, FLOW_EVENTS * 2);
  const rawLimited = await baseline(
    h.receiver.url,
    bodyBytes,
    h.maxInFlightPerWebhook,
    FLOW_EVENTS,
  );

  const perEntity = Math.ceil(FLOW_EVENTS / FLOW_ENTITIES);
  const stream = (hook: Hook, prefix: string) =>
    versionStream(hook, prefix, FLOW_ENTITIES, perEntity, 'shuffled');
  const shapes = [
    ['any', 'ordered', 'one webhook'],
    ['anySpread', 'orderedSpread', `${SPREAD} webhooks`],
  ] as const;
  type Stream = Awaited<ReturnType<typeof streamRun>>;
  const pairs: { shape: string; any: Stream; per: Stream }[] = [];
  for (const [unordered, ordered, shape] of shapes) {
    log(`${FLOW_EVENTS} events over ${FLOW_ENTITIES} records, ${shape}, delivery_order any…`);
    const any = await streamRun(h, unordered, stream(unordered, unordered), profileOf(unordered));
    log(`the same, delivery_order per_entity…`);
    const per = await streamRun(h, ordered, stream(ordered, ordered), profileOf(ordered));
    pairs.push({ shape, any, per });
  }

  const row = (name: string, r: Stream, base: Stream) =>
    `| ${name} | ${r.events} | ${r.tally.calls} | ${r.superseded} | ${accepted(r)} | ${r.seconds.toFixed(2)} | ${Math.round(r.rate)} | ${(r.rate / base.rate).toFixed(2)}× | ${cpuCells(r.cpu)} | ${r.stages.matched} | ${r.stages.sent} | ${r.tally.backwards} |`;
  const rawRow = (name: string, r: { count: number; seconds: number }) =>
    `| ${name} | ${r.count} | ${r.count} | | | ${r.seconds.toFixed(2)} | ${Math.round(r.count / r.seconds)} | | | | | |`;
  const ratio = (p: (typeof pairs)[number]) => p.per.rate / p.any.rate;
  const lines = [
    `| ordered vs unordered: ${FLOW_EVENTS} update events of ${FLOW_ENTITIES} records (${perEntity} versions each, shuffled) | events | calls received | superseded | all accepted (s) | last call received (s) | delivered/s | vs any | CPU ms per 1000 deliveries: node (ingest + workers) / Postgres / redis / receiver | accepted → call created, p50 / p99 ms | call created → sent, p50 / p99 ms | arrivals older than one before (per record) |`,
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
    rawRow(`raw undici request(), ${h.connectionsPerOrigin} in flight`, raw),
    rawRow(`raw undici request(), ${h.maxInFlightPerWebhook} in flight`, rawLimited),
    ...pairs.flatMap((p) => [
      row(`${p.shape}, delivery_order any (baseline)`, p.any, p.any),
      row(`${p.shape}, delivery_order per_entity`, p.per, p.any),
    ]),
    '',
    ...pairs.flatMap((p) => [
      `${p.shape}, any: ${describeCounts(p.any.flow)}`,
      `${p.shape}, per_entity: ${describeCounts(p.per.flow)}`,
    ]),
  ];
  for (const p of pairs) {
    for (const [kind, r] of [
      ['any', p.any],
      ['per_entity', p.per],
    ] as const) {
      if (r.profile) {
        lines.push('', `CPU profile of this process, ${p.shape}, ${kind}:`, '', r.profile);
      }
      if (r.sql) lines.push('', `The workers' statements, ${p.shape}, ${kind}:`, '', r.sql);
    }
  }
  return {
    lines,
    targets: [
      ...pairs.map(
        (p) =>
          `| ordered delivery over ${FLOW_ENTITIES} records ≥ 0.5× the unordered rate (${p.shape}) | ${Math.round(p.per.rate)} vs ${Math.round(p.any.rate)} delivered/s: ${ratio(p).toFixed(2)}× | ${pass(ratio(p) >= 0.5)} |`,
      ),
      ...pairs.map(
        (p) =>
          `| per_entity (${p.shape}): each record's calls arrive in order | ${p.per.tally.backwards} arrivals older than one before | ${pass(p.per.tally.backwards === 0)} |`,
      ),
    ],
  };
}

/** Coalescing to a slow receiver, interleaved and grouped; a slice without coalesce beside. */
async function coalesceSection(h: FlowRun): Promise<Section> {
  const slice = `${COALESCE_ENTITIES} × ${COALESCE_BASELINE_UPDATES}`;
  log(`${slice} interleaved updates, receiver ${SLOW_MS} ms, no coalesce…`);
  const sequential = await coalesceRun(
    h,
    'sequential',
    'seq',
    COALESCE_BASELINE_UPDATES,
    'interleaved',
  );
  log(`${COALESCE_ENTITIES} × ${COALESCE_UPDATES} interleaved updates, coalesce…`);
  const interleaved = await coalesceRun(h, 'coalesce', 'coal-i', COALESCE_UPDATES, 'interleaved');
  log(`${COALESCE_ENTITIES} × ${COALESCE_UPDATES} grouped updates, coalesce…`);
  const grouped = await coalesceRun(h, 'coalesce', 'coal-g', COALESCE_UPDATES, 'grouped');

  type Coalesce = typeof grouped;
  const row = (name: string, r: Coalesce) =>
    `| ${name} | ${COALESCE_ENTITIES} × ${r.updates} ${r.order} | ${r.tally.calls} | ${r.tally.maxCalls} / ${(r.tally.calls / Math.max(1, r.tally.entities)).toFixed(2)} | ${r.why.histogram} | ${r.tally.atFinal} / ${COALESCE_ENTITIES} | ${r.tally.backwards} | ${r.calls.carried} of ${r.events} (${r.calls.failed} superseded) | ${accepted(r)} | ${r.seconds.toFixed(2)} | ${r.why.span} | ${r.why.gap} | ${cpuCells(r.cpu)} |`;
  const targets = (r: Coalesce) => [
    `| coalescing ${COALESCE_ENTITIES} × ${r.updates} updates (${r.order}), receiver ${SLOW_MS} ms: ≤ 2 calls per record | max ${r.tally.maxCalls}, mean ${(r.tally.calls / COALESCE_ENTITIES).toFixed(2)} | ${pass(r.tally.maxCalls <= 2)} |`,
    `| coalescing (${r.order}): each record's last received state is its last version | ${r.tally.atFinal} of ${COALESCE_ENTITIES} | ${pass(r.tally.atFinal === COALESCE_ENTITIES)} |`,
  ];
  return {
    lines: [
      `| coalescing: receiver answers after ${SLOW_MS} ms; per_entity | records × updates | calls received | calls per record, max / mean | records by calls | records whose last call has their last version | arrivals older than one before | events carried by calls sent | all accepted (s) | last call received (s) | a record's updates kept coming for, p50 / p99 ms | between two sends of a record, p50 / p99 ms | CPU ms per 1000 events: node / Postgres / redis / receiver |`,
      '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
      row(
        `no coalesce (baseline: ${COALESCE_BASELINE_UPDATES} of the ${COALESCE_UPDATES} updates; the whole stream would take ~${Math.round(COALESCE_UPDATES / COALESCE_BASELINE_UPDATES)}× as long)`,
        sequential,
      ),
      row('coalesce_events', interleaved),
      row('coalesce_events', grouped),
      '',
      `no coalesce: ${describeCounts(sequential.flow)}`,
      `coalesce, interleaved: ${describeCounts(interleaved.flow)}`,
      `coalesce, grouped: ${describeCounts(grouped.flow)}`,
    ],
    targets: [...targets(interleaved), ...targets(grouped)],
  };
}

/** A publish of BATCH_RECORDS records to a batching webhook and to one without batch. */
async function batchSection(h: FlowRun): Promise<Section> {
  log('warming up…');
  await publishRun(h, 'batch', 'warm-batch');
  log(`publish of ${BATCH_RECORDS} records, no batch…`);
  const unbatched = await publishRun(h, 'unbatched', 'unbatched');
  log(`the same, batch of ${BATCH_WINDOW_MS} ms…`);
  const batched = await publishRun(h, 'batch', 'batched');
  const row = (name: string, r: typeof batched) =>
    `| ${name} | ${BATCH_RECORDS} | ${r.tally.calls} | ${r.tally.events} (${r.tally.entities} records) | ${r.accepted.toFixed(0)} | ${r.latency.toFixed(0)} | ${Math.round(r.tally.events / (r.latency / 1000))} | ${cpuCells(r.cpu)} |`;
  return {
    lines: [
      `| batching: one POST /events of ${BATCH_RECORDS} publish events, one webhook | records | calls received | events listed | POST → 202 (ms) | POST → last call received (ms) | events delivered/s | CPU ms per 1000 events: node / Postgres / redis / receiver |`,
      '|---|---|---|---|---|---|---|---|',
      row('no batch (baseline)', unbatched),
      row(`batch {window_ms: ${BATCH_WINDOW_MS}, max_events: 1000}`, batched),
      '',
      `batch: ${describeCounts(batched.flow)}`,
    ],
    targets: [
      `| batching (${BATCH_WINDOW_MS} ms window) a publish of ${BATCH_RECORDS} records: ≤ 2 calls | ${batched.tally.calls} calls | ${pass(batched.tally.calls <= 2)} |`,
      `| batching: the calls list every event | ${batched.tally.events} of ${BATCH_RECORDS} events, ${batched.tally.entities} records | ${pass(batched.tally.events === BATCH_RECORDS && batched.tally.entities === BATCH_RECORDS)} |`,
    ],
  };
}

const SECTIONS = { ordered: orderedSection, coalesce: coalesceSection, batch: batchSection };
/** The sections to run (FLOW_ROWS=ordered,coalesce,batch: all, in that order). */
const FLOW_ROWS = (process.env['FLOW_ROWS'] ?? 'ordered,coalesce,batch').split(',');

/**
 * Runs the flow rows (the workers must be running, with the webhooks of prepareFlow in their
 * index) and returns the table to print.
 */
export async function flowRows(harness: FlowHarness, ids: FlowWebhooks): Promise<string[]> {
  const h: FlowRun = { ...harness, ids };
  if (PROFILE_DIR) mkdirSync(PROFILE_DIR, { recursive: true });
  const sections: Section[] = [];
  for (const name of FLOW_ROWS) {
    const section = SECTIONS[name as keyof typeof SECTIONS] as
      ((h: FlowRun) => Promise<Section>) | undefined;
    if (!section) throw new Error(`FLOW_ROWS: no section ${name} (ordered, coalesce, batch)`);
    sections.push(await section(h));
  }
  return [
    `Flow control (issue #15), workers in the bench process; ${h.maxInFlightPerWebhook} in flight per webhook (DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK), events posted ${h.batch} per POST /events unless said`,
    ...sections.flatMap((section) => ['', ...section.lines]),
    '',
    '| target (issue #15) | measured | met |',
    '|---|---|---|',
    ...sections.flatMap((section) => section.targets),
  ];
}
