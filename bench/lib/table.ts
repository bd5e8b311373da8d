/** A Markdown table, its columns padded and right-aligned. */
export const table = (header: string[], body: string[][]) => {
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    `| ${cells.map((c, i) => c.padStart(widths[i]!)).join(' | ')} |`;
  return `${line(header)}\n|${widths.map((w) => `${'-'.repeat(w + 1)}:`).join('|')}|\n${body.map(line).join('\n')}\n`;
};
