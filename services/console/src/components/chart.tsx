import { useEffect, useRef, useState } from 'preact/hooks';
import type { ChartKind, DrawnChart } from '../charts/webhook-charts.js';
import type { StatsSeries } from '../lib/stats-series.js';

/**
 * A chart of the webhook page, drawn once the chart module (and uPlot with it) has loaded; new
 * data redraws the same chart. The canvas says nothing to a screen reader: `summary` does.
 */
export function Chart({
  kind,
  title,
  summary,
  series,
  height = 180,
}: {
  kind: ChartKind;
  title: string;
  summary: string;
  series: StatsSeries;
  height?: number;
}) {
  const target = useRef<HTMLDivElement>(null);
  const chart = useRef<DrawnChart | null>(null);
  const seriesRef = useRef(series);
  seriesRef.current = series;
  const [failed, setFailed] = useState(false);

  useEffect(() => {
    let cancelled = false;
    let observer: ResizeObserver | undefined;
    import('../charts/webhook-charts.js').then(
      ({ drawChart }) => {
        const element = target.current;
        if (cancelled || !element) return;
        chart.current = drawChart(kind, element, seriesRef.current, height);
        observer = new ResizeObserver(() => chart.current?.resize(element.clientWidth));
        observer.observe(element);
      },
      () => setFailed(true),
    );
    return () => {
      cancelled = true;
      observer?.disconnect();
      chart.current?.destroy();
      chart.current = null;
    };
  }, [kind, height]);

  useEffect(() => chart.current?.update(series), [series]);

  return (
    <figure class="chart card" data-chart={kind}>
      <h3 class="chart-title">{title}</h3>
      <div ref={target} class="chart-canvas" role="img" aria-label={`${title}: ${summary}`} />
      {failed && <p class="muted small">The chart could not be loaded.</p>}
      <figcaption class="muted small">{summary}</figcaption>
    </figure>
  );
}
