/** The value at share `p` (0 to 1) of `sorted` (ascending). */
function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

/**
 * `samples` timings (ms) of Herald and of its baseline, taken in turns so that both meet the
 * machine in the same state; the table cells of their p50 and p95: Herald's, then the baseline's.
 */
export async function pairedLatencies(
  samples: number,
  herald: () => Promise<number>,
  baseline: () => Promise<number>,
): Promise<string[]> {
  const h: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < samples; i++) {
    h.push(await herald());
    b.push(await baseline());
  }
  const cells = (timings: number[]) => {
    const sorted = timings.sort((x, y) => x - y);
    return [percentile(sorted, 0.5).toFixed(2), percentile(sorted, 0.95).toFixed(2)];
  };
  return [...cells(h), ...cells(b)];
}
