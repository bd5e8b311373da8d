import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { formatMs, type StatsSeries } from '../lib/stats-series.js';

/**
 * The webhook page's two charts, drawn by uPlot (small, fast, canvas). This module is loaded on
 * demand (components/chart.tsx imports it dynamically), so the list and the call log never
 * download the chart library.
 */
const OK = '#17794a';
const BAD = '#b3261e';
const ACCENT = '#3d4ed8';
const GRID = { stroke: '#eef0f4', width: 1 };
const AXIS = { stroke: '#5e6778', grid: GRID, ticks: { stroke: '#dfe3ea', width: 1 } };

export type ChartKind = 'deliveries' | 'latency';

function options(kind: ChartKind, width: number, height: number, step: number): uPlot.Options {
  const base = {
    width,
    height,
    cursor: { drag: { x: false, y: false } },
    legend: { live: true },
    // Each point is a bucket's start: the axis runs to the end of the last bucket, so that the
    // current one (drawn from its start rightwards) is not cut off at the edge.
    scales: {
      x: { time: true, range: (_u: uPlot, min: number, max: number) => [min, max + step] },
      // Counts and durations start at zero, whatever the lowest bucket.
      y: { range: (_u: uPlot, _min: number, max: number) => [0, max > 0 ? max * 1.15 : 1] },
    },
  } satisfies Partial<uPlot.Options>;
  if (kind === 'deliveries') {
    const bars = uPlot.paths.bars!({ size: [0.7, 24], align: 1 });
    return {
      ...base,
      axes: [AXIS, { ...AXIS, label: 'attempts', size: 48 }],
      series: [
        {},
        // Stacked by hand: "Failed" is drawn as the bucket's total, then "Succeeded" over it.
        {
          label: 'Failed',
          stroke: BAD,
          fill: BAD,
          paths: bars,
          points: { show: false },
          value: (u, _v, _si, i) =>
            i === null ? '—' : String((u.data[1]?.[i] ?? 0) - (u.data[2]?.[i] ?? 0)),
        },
        { label: 'Succeeded', stroke: OK, fill: OK, paths: bars, points: { show: false } },
      ],
    };
  }
  return {
    ...base,
    axes: [
      AXIS,
      { ...AXIS, label: 'ms', size: 56, values: (_u, ticks) => ticks.map((t) => formatMs(t)) },
    ],
    series: [
      {},
      {
        label: 'Median latency',
        stroke: ACCENT,
        width: 2,
        fill: 'rgba(61, 78, 216, 0.08)',
        spanGaps: false,
        points: { show: true, size: 5 },
        value: (_u, v) => formatMs(v),
      },
    ],
  };
}

/** A bar of nothing is not drawn (a zero would be stroked as a line along the axis). */
const orNull = (value: number): number | null => (value === 0 ? null : value);

function data(kind: ChartKind, series: StatsSeries): uPlot.AlignedData {
  if (kind === 'deliveries') {
    const total = series.success.map((success, i) => orNull(success + series.failure[i]!));
    return [series.time, total, series.success.map(orNull)];
  }
  return [series.time, series.latencyP50];
}

/** A drawn chart: new data without a new chart, a new width on resize, and its removal. */
export interface DrawnChart {
  update(series: StatsSeries): void;
  resize(width: number): void;
  destroy(): void;
}

export function drawChart(
  kind: ChartKind,
  target: HTMLElement,
  series: StatsSeries,
  height: number,
): DrawnChart {
  const plot = new uPlot(
    options(kind, target.clientWidth, height, series.step),
    data(kind, series),
    target,
  );
  return {
    update: (next) => plot.setData(data(kind, next)),
    resize: (width) => plot.setSize({ width, height }),
    destroy: () => plot.destroy(),
  };
}
