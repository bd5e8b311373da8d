/**
 * The API's error envelope (docs/api.md, Errors) turned into what screens show: a headline for the
 * problem, and field errors keyed by their dotted path (`events.1.event_types.0`) so that a form
 * can put each one beside the control it is about.
 */
export interface ApiErrorEntry {
  code: string;
  details: { field?: string; code?: string; message?: string; [key: string]: unknown };
  transient?: boolean;
}

export interface FieldProblem {
  field: string;
  code: string;
  message: string;
}

/** Reads the entries of an error body; anything that is not the envelope gives none. */
export function readErrorEntries(body: unknown): ApiErrorEntry[] {
  if (typeof body !== 'object' || body === null) return [];
  const data = (body as { data?: unknown }).data;
  if (!Array.isArray(data)) return [];
  const entries: ApiErrorEntry[] = [];
  for (const item of data) {
    if (typeof item !== 'object' || item === null) continue;
    const attributes = (item as { attributes?: unknown }).attributes;
    if (typeof attributes !== 'object' || attributes === null) continue;
    const { code, details, transient } = attributes as Record<string, unknown>;
    if (typeof code !== 'string') continue;
    entries.push({
      code,
      details:
        typeof details === 'object' && details !== null
          ? (details as ApiErrorEntry['details'])
          : {},
      ...(transient === true ? { transient: true } : {}),
    });
  }
  return entries;
}

/** Field errors (INVALID_FIELD and INVALID_ATTRIBUTES entries that name a field). */
export function fieldProblems(entries: readonly ApiErrorEntry[]): FieldProblem[] {
  const problems: FieldProblem[] = [];
  for (const entry of entries) {
    if (entry.code !== 'INVALID_FIELD' && entry.code !== 'INVALID_ATTRIBUTES') continue;
    const field = entry.details.field;
    if (typeof field !== 'string') continue;
    problems.push({
      field,
      code: entry.details.code ?? entry.code,
      message: entry.details.message ?? entry.code,
    });
  }
  return problems;
}

/** The problems whose path is `prefix` itself or lies under it (`events.1` covers `events.1.x`). */
export function problemsUnder(
  problems: readonly FieldProblem[],
  prefix: string,
  options: { exact?: boolean } = {},
): FieldProblem[] {
  return problems.filter(
    (problem) =>
      problem.field === prefix || (!options.exact && problem.field.startsWith(`${prefix}.`)),
  );
}

/** Problems not claimed by any of the given prefixes (shown in the form's summary). */
export function unclaimedProblems(
  problems: readonly FieldProblem[],
  prefixes: readonly string[],
): FieldProblem[] {
  return problems.filter(
    (problem) =>
      !prefixes.some(
        (prefix) => problem.field === prefix || problem.field.startsWith(`${prefix}.`),
      ),
  );
}

/** One sentence for a failed request, written for a person, by status and code. */
export function describeFailure(status: number, entries: readonly ApiErrorEntry[]): string {
  const first = entries[0];
  const message = first?.details.message;
  switch (first?.code) {
    case 'INVALID_AUTHORIZATION_HEADER':
      return 'Herald refused this API token (401). It may be mistyped, revoked or expired: sign in again with a valid token.';
    case 'INSUFFICIENT_PERMISSIONS':
      return "This token's role does not allow this (403). Webhooks, the call log, events and tokens need an admin token; records need a read_only or admin token.";
    case 'INVALID_ENVIRONMENT':
      return `Unknown environment (404${message ? `: ${message}` : ''}). Pick another one in the header.`;
    case 'RATE_LIMIT_EXCEEDED':
      return 'Too many requests for this token right now (429). Wait a few seconds and try again.';
    case 'SERVICE_UNAVAILABLE':
      return 'Herald is temporarily unavailable (503). Try again shortly.';
    case undefined:
      if (status === 0) return 'Could not reach Herald. Check your connection.';
      return `Herald answered ${status} without an error description.`;
    default:
      return `${first?.code ?? 'ERROR'} (${status})${message ? `: ${message}` : ''}`;
  }
}
