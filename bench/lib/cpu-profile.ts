/**
 * A V8 CPU profile of a benchmark's server process, taken over one measured run (node:inspector)
 * and summed up by where its self time went: each package under node_modules, each Herald
 * package, Node's own HTTP/net/stream code, garbage collection. The whole profile is written for
 * Chrome DevTools too.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { table } from './table.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

export interface ProfileSummary {
  /** µs of the profile's span spent running anything (not idle). */
  busyMicros: number;
  /** Self time by bucket (package or part of Node), largest first. */
  buckets: { name: string; micros: number }[];
  /** The functions with the most self time, largest first. */
  top: { name: string; micros: number }[];
}

function bucketOf(frame: ProfileNode['callFrame']): string {
  const { functionName, url } = frame;
  if (functionName === '(garbage collector)') return 'garbage collector';
  if (functionName === '(program)') return 'V8 and native (program)';
  if (url.startsWith('node:')) {
    return /http|net|stream|socket|tcp|dns|url/.test(url)
      ? 'node: http, net, streams'
      : 'node: other';
  }
  const modules = url.lastIndexOf('/node_modules/');
  if (modules >= 0) {
    const [scope = '', name = ''] = url.slice(modules + '/node_modules/'.length).split('/');
    return scope.startsWith('@') ? `${scope}/${name}` : scope;
  }
  const herald = /\/(packages|services|bench)\/([^/]+)\//.exec(url);
  if (herald) return herald[1] === 'bench' ? 'bench' : `@herald/${herald[2]}`;
  if (url === '') return 'native (JSON, crypto, Buffer…)';
  return 'other';
}

function summarizeProfile(profile: Profile, top = 15): ProfileSummary {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map<number, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  // timeDeltas[i] is the time before sample i: sample i ran until sample i + 1.
  for (let i = 0; i < samples.length; i++) {
    const micros = deltas[i + 1] ?? 0;
    self.set(samples[i]!, (self.get(samples[i]!) ?? 0) + micros);
  }
  const buckets = new Map<string, number>();
  const functions = new Map<string, number>();
  let busy = 0;
  for (const [id, micros] of self) {
    const node = byId.get(id);
    if (!node || node.callFrame.functionName === '(idle)') continue;
    if (node.callFrame.functionName === '(root)') continue;
    busy += micros;
    const bucket = bucketOf(node.callFrame);
    buckets.set(bucket, (buckets.get(bucket) ?? 0) + micros);
    const file = node.callFrame.url.split('/').pop() ?? '';
    const name = `${node.callFrame.functionName || '(anonymous)'} (${bucket}${file ? `, ${file}:${node.callFrame.lineNumber + 1}` : ''})`;
    functions.set(name, (functions.get(name) ?? 0) + micros);
  }
  const sorted = (map: Map<string, number>) =>
    [...map].map(([name, micros]) => ({ name, micros })).sort((a, b) => b.micros - a.micros);
  return { busyMicros: busy, buckets: sorted(buckets), top: sorted(functions).slice(0, top) };
}

/** Profiles this process between start() and stop(file). */
export class CpuProfiler {
  readonly #session = new Session();

  async start(): Promise<void> {
    this.#session.connect();
    await this.#session.post('Profiler.enable');
    // 200 µs between samples: a one-event request takes a few hundred µs.
    await this.#session.post('Profiler.setSamplingInterval', { interval: 200 });
    await this.#session.post('Profiler.start');
  }

  /** Writes the profile to `file` (for DevTools) and returns its summary. */
  async stop(file: string): Promise<ProfileSummary> {
    const { profile } = await this.#session.post('Profiler.stop');
    await this.#session.post('Profiler.disable');
    this.#session.disconnect();
    writeFileSync(file, JSON.stringify(profile));
    return summarizeProfile(profile);
  }
}

/** A profile's buckets of at least 1 % of its busy time and its top functions, in µs per `unit`. */
export function profileTable(summary: ProfileSummary, units: number, unit = 'request'): string {
  const perUnit = (micros: number) => (micros / units).toFixed(0);
  const share = (micros: number) => `${((100 * micros) / summary.busyMicros).toFixed(1)} %`;
  const rows = summary.buckets
    .filter((bucket) => bucket.micros >= summary.busyMicros / 100)
    .map((bucket) => [bucket.name, share(bucket.micros), perUnit(bucket.micros)]);
  rows.push(['busy (all of the above and the rest)', '100 %', perUnit(summary.busyMicros)]);
  const top = summary.top.map((f) => [f.name, share(f.micros), perUnit(f.micros)]);
  return (
    table(['self time by package', 'share', `µs/${unit}`], rows) +
    '\n' +
    table(['self time by function', 'share', `µs/${unit}`], top)
  );
}
