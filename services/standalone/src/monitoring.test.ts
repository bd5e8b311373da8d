import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { z } from 'zod';
import { deliveryMetrics } from '@herald/delivery';
import { ingestMetrics } from '@herald/ingest';
import { itemsQueryDuration } from '@herald/read';
import { createMetrics } from '@herald/runtime';

// The monitoring in infra/ against the code: the alert rules pass promtool's checks and unit
// tests (infra/prometheus/alerts.test.yml: an outage that fires and a blip that does not, for
// every rule), and the alerts and Grafana dashboards only name metrics Herald registers.
// promtool is Debian's (scripts/ensure-promtool.sh, run by the test command).

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const INFRA = join(ROOT, 'infra');
const DASHBOARDS = join(INFRA, 'grafana', 'dashboards');

function promtool(...args: string[]): { status: number | null; output: string } {
  const result = spawnSync('promtool', args, { cwd: ROOT, encoding: 'utf8' });
  if (result.error) {
    throw new Error(
      `promtool could not run (${result.error.message}): the test command installs it ` +
        '(scripts/ensure-promtool.sh)',
    );
  }
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

/** Every metric name a Herald process can expose: the registries of every service, and `up`. */
async function registeredNames(): Promise<Set<string>> {
  const metrics = createMetrics();
  ingestMetrics(metrics.registry);
  deliveryMetrics(metrics.registry);
  itemsQueryDuration(metrics);
  const names = new Set(['up']);
  for (const { name, type } of await metrics.registry.getMetricsAsJSON()) {
    names.add(name);
    // Typed as a numeric enum, the type is a string at run time ('histogram').
    const suffixes = { histogram: ['_bucket', '_sum', '_count'], summary: ['_sum', '_count'] };
    for (const suffix of suffixes[String(type) as keyof typeof suffixes] ?? []) {
      names.add(name + suffix);
    }
  }
  return names;
}

const PROMQL_WORDS = new Set([
  ...['sum', 'max', 'min', 'avg', 'count', 'by', 'without', 'on', 'ignoring', 'bool', 'offset'],
  ...['rate', 'increase', 'changes', 'histogram_quantile', 'absent'],
  ...['or', 'and', 'unless', 'group_left', 'group_right'],
]);

/**
 * The metric names an expression selects: what is left once strings, ranges, label lists and
 * matchers are taken out, less PromQL's own words; a `{__name__=~"a_(b|c)"}` gives a_b and a_c,
 * Grafana's `label_values(a, job)` gives a.
 */
function metricNames(expr: string): string[] {
  const byRegex = [...expr.matchAll(/__name__=~"([^"]*)"/g)].flatMap(([, regex]) => {
    const group = /^(.*)\(([^()]*)\)(.*)$/.exec(regex!);
    return group ? group[2]!.split('|').map((part) => `${group[1]}${part}${group[3]}`) : [regex!];
  });
  const words =
    expr
      .replace(/label_values\((\w+), *\w+\)/g, '$1')
      .replace(/"(?:[^"\\]|\\.)*"/g, '""')
      .replace(/\[[^\]]*\]/g, '')
      .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '')
      .replace(/\{[^}]*\}/g, '')
      .match(/[A-Za-z_:][A-Za-z0-9_:]*/g) ?? [];
  return [...byRegex, ...words.filter((word) => !PROMQL_WORDS.has(word))];
}

const Alerts = z.object({
  groups: z.array(
    z.object({
      name: z.string(),
      rules: z.array(z.object({ alert: z.string(), expr: z.string() }).passthrough()),
    }),
  ),
});
const AlertTests = z.object({
  tests: z.array(
    z.object({
      name: z.string(),
      alert_rule_test: z.array(
        z.object({ alertname: z.string(), exp_alerts: z.array(z.unknown()).optional() }),
      ),
    }),
  ),
});

const readYaml = (path: string): unknown => parse(readFileSync(path, 'utf8'));
const alertRules = () =>
  Alerts.parse(readYaml(join(INFRA, 'prometheus', 'alerts.yml'))).groups.flatMap((g) => g.rules);

describe('the alert rules', () => {
  it('pass promtool check rules', () => {
    const { status, output } = promtool('check', 'rules', 'infra/prometheus/alerts.yml');
    expect(status, output).toBe(0);
  });

  // promtool evaluates every rule test's series: 2–5 s on a quiet machine, 36 s at load 7 beside
  // the suite, past the default timeout.
  it('pass their unit tests (promtool test rules)', { timeout: 120_000 }, () => {
    const { status, output } = promtool('test', 'rules', 'infra/prometheus/alerts.test.yml');
    expect(status, output).toBe(0);
  });

  it('each have a case that fires and one (a blip) in which they never do', () => {
    const groups = AlertTests.parse(readYaml(join(INFRA, 'prometheus', 'alerts.test.yml'))).tests;
    const fires = (check: { exp_alerts?: unknown[] | undefined }) =>
      (check.exp_alerts ?? []).length > 0;
    for (const { alert } of alertRules()) {
      const cases = groups
        .map((group) => group.alert_rule_test.filter((check) => check.alertname === alert))
        .filter((checks) => checks.length > 0);
      expect(
        cases.some((checks) => checks.some(fires)),
        `${alert} fires`,
      ).toBe(true);
      expect(
        cases.some((checks) => !checks.some(fires)),
        `${alert} stays quiet`,
      ).toBe(true);
    }
  });

  it('name only metrics Herald registers', async () => {
    const known = await registeredNames();
    for (const { alert, expr } of alertRules()) {
      const names = metricNames(expr);
      expect(names.length, alert).toBeGreaterThan(0);
      for (const name of names) expect(known, `${alert}: ${name}`).toContain(name);
    }
  });
});

const DatasourceRef = z.object({ type: z.literal('prometheus'), uid: z.literal('${datasource}') });
const GridPos = z
  .object({
    x: z.number().int().min(0),
    y: z.number().int().min(0),
    w: z.number().int().min(1),
    h: z.number().int().min(1),
  })
  .strict()
  .refine((pos) => pos.x + pos.w <= 24, 'within the 24 columns');
const Target = z
  .object({
    refId: z.string().regex(/^[A-Z]$/),
    datasource: DatasourceRef,
    expr: z.string().min(1),
    legendFormat: z.string().optional(),
    instant: z.boolean().optional(),
    range: z.boolean().optional(),
    format: z.enum(['time_series', 'table']).optional(),
  })
  .strict();
const Row = z
  .object({
    id: z.number().int().positive(),
    type: z.literal('row'),
    title: z.string().min(1),
    collapsed: z.literal(false),
    gridPos: GridPos,
    panels: z.array(z.never()),
  })
  .strict();
const Panel = z
  .object({
    id: z.number().int().positive(),
    type: z.enum(['timeseries', 'stat', 'table']),
    title: z.string().min(1),
    description: z.string().min(1),
    datasource: DatasourceRef,
    gridPos: GridPos,
    targets: z.array(Target).min(1),
    fieldConfig: z.object({
      defaults: z.record(z.string(), z.unknown()),
      overrides: z.array(z.unknown()),
    }),
    options: z.record(z.string(), z.unknown()),
    transformations: z.array(z.object({ id: z.string(), options: z.unknown() })).optional(),
  })
  .strict();
type Panel = z.infer<typeof Panel>;
const Variable = z.union([
  z.object({
    name: z.literal('datasource'),
    type: z.literal('datasource'),
    query: z.literal('prometheus'),
  }),
  z.object({ name: z.literal('job'), type: z.literal('custom'), query: z.string().min(1) }),
  z.object({
    name: z.literal('job'),
    type: z.literal('query'),
    datasource: DatasourceRef,
    query: z.object({ query: z.string().regex(/^label_values\((\w+), job\)$/), refId: z.string() }),
  }),
]);
const Dashboard = z.object({
  uid: z.string().regex(/^herald-[a-z]+$/),
  title: z.string().startsWith('Herald — '),
  description: z.string().min(1),
  tags: z.array(z.string()).refine((tags) => tags.includes('herald')),
  schemaVersion: z.number().int().min(36),
  time: z.object({ from: z.string(), to: z.string() }),
  refresh: z.string(),
  templating: z.object({ list: z.array(Variable).min(2) }),
  panels: z.array(z.union([Row, Panel])).min(1),
});

const dashboardFiles = () => readdirSync(DASHBOARDS).filter((file) => file.endsWith('.json'));
const dashboards = () =>
  dashboardFiles().map((file) => ({
    file,
    board: Dashboard.parse(JSON.parse(readFileSync(join(DASHBOARDS, file), 'utf8'))),
  }));
const graphs = (panels: z.infer<typeof Dashboard>['panels']): Panel[] =>
  panels.filter((panel): panel is Panel => panel.type !== 'row');

describe('the Grafana dashboards', () => {
  it('are delivery, ingest, read and the runtime, each well formed, named by its uid', () => {
    expect(dashboardFiles().sort()).toEqual([
      'herald-delivery.json',
      'herald-ingest.json',
      'herald-read.json',
      'herald-runtime.json',
    ]);
    for (const { file, board } of dashboards()) {
      expect(file).toBe(`${board.uid}.json`);
      const ids = board.panels.map((panel) => panel.id);
      expect(new Set(ids).size, `${file}: panel ids`).toBe(ids.length);
      // No two panels share a cell of the grid; rows span it.
      const cells = new Set<string>();
      for (const panel of board.panels) {
        const { x, y, w, h } = panel.gridPos;
        if (panel.type === 'row') expect(w, `${file}: row ${panel.title}`).toBe(24);
        for (let i = x; i < x + w; i++) {
          for (let j = y; j < y + h; j++) {
            expect(cells.has(`${i},${j}`), `${file}: ${panel.title} overlaps`).toBe(false);
            cells.add(`${i},${j}`);
          }
        }
      }
      for (const panel of graphs(board.panels)) {
        const refIds = panel.targets.map((target) => target.refId);
        expect(new Set(refIds).size, `${file}: ${panel.title} refIds`).toBe(refIds.length);
      }
    }
  });

  it('query only metrics Herald registers', async () => {
    const known = await registeredNames();
    for (const { file, board } of dashboards()) {
      const exprs = graphs(board.panels).flatMap((panel) =>
        panel.targets.map((target) => ({ where: `${file}: ${panel.title}`, expr: target.expr })),
      );
      for (const variable of board.templating.list) {
        if (variable.type === 'query') exprs.push({ where: file, expr: variable.query.query });
      }
      for (const { where, expr } of exprs) {
        const names = metricNames(expr);
        expect(names.length, where).toBeGreaterThan(0);
        for (const name of names) expect(known, `${where}: ${name}`).toContain(name);
      }
    }
  });

  it('query in PromQL that promtool parses', () => {
    // Each query as a recording rule, Grafana's variables given values, for promtool to parse.
    const rules = dashboards().flatMap(({ board }) =>
      graphs(board.panels).flatMap((panel) =>
        panel.targets.map((target) => ({
          record: `dashboard:${board.uid.replace(/-/g, '_')}:${panel.id}${target.refId}`,
          expr: target.expr.replaceAll('$__rate_interval', '1m').replaceAll('$job', 'ingest'),
        })),
      ),
    );
    const dir = mkdtempSync(join(tmpdir(), 'herald-dashboards-'));
    try {
      const file = join(dir, 'dashboards.rules.yml');
      writeFileSync(file, stringify({ groups: [{ name: 'dashboards', rules }] }));
      const { status, output } = promtool('check', 'rules', file);
      expect(status, output).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('are provisioned by docker-compose.yml with the stack Prometheus as their data source', () => {
    const compose = z
      .object({
        services: z.object({
          prometheus: z.object({ volumes: z.array(z.string()) }),
          grafana: z.object({
            volumes: z.array(z.string()),
            environment: z.record(z.string(), z.string()),
          }),
        }),
      })
      .parse(readYaml(join(ROOT, 'docker-compose.yml')));
    const mount = (volumes: string[], source: string) =>
      volumes.find((volume) => volume.startsWith(`${source}:`))?.split(':')[1];
    const grafana = compose.services.grafana;
    const provider = z
      .object({ providers: z.array(z.object({ options: z.object({ path: z.string() }) })) })
      .parse(readYaml(join(INFRA, 'grafana', 'provisioning', 'dashboards', 'herald.yml')));
    const dashboardsAt = mount(grafana.volumes, './infra/grafana/dashboards');
    expect(dashboardsAt).toBe(provider.providers[0]!.options.path);
    expect(mount(grafana.volumes, './infra/grafana/provisioning')).toBe(
      '/etc/grafana/provisioning',
    );
    const home = grafana.environment['GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH']!;
    expect(dashboardFiles()).toContain(relative(dashboardsAt!, home));
    const datasource = z
      .object({ datasources: z.array(z.object({ type: z.string(), url: z.string() })) })
      .parse(readYaml(join(INFRA, 'grafana', 'provisioning', 'datasources', 'prometheus.yml')));
    expect(datasource.datasources).toEqual([
      expect.objectContaining({ type: 'prometheus', url: 'http://prometheus:9090' }),
    ]);
    expect(mount(compose.services.prometheus.volumes, './infra/prometheus/alerts.yml')).toBe(
      '/etc/prometheus/alerts.yml',
    );
  });
});

describe('the metric registries', () => {
  it('are the only places metrics are made (so the checks above see every one)', () => {
    const makers: string[] = [];
    const visit = (dir: string): void => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) visit(path);
        else if (/(?<!\.test)(?<!\.test-support)\.tsx?$/.test(entry.name)) {
          if (/new (Counter|Gauge|Histogram|Summary)\(/.test(readFileSync(path, 'utf8'))) {
            makers.push(relative(ROOT, path));
          }
        }
      }
    };
    for (const kind of ['packages', 'services']) {
      for (const name of readdirSync(join(ROOT, kind))) {
        const src = join(ROOT, kind, name, 'src');
        if (readdirSync(join(ROOT, kind, name)).includes('src')) visit(src);
      }
    }
    expect(makers.sort()).toEqual([
      'packages/runtime/src/metrics.ts',
      'services/delivery/src/metrics.ts',
      'services/ingest/src/events/metrics.ts',
      'services/read/src/metrics.ts',
    ]);
  });
});
