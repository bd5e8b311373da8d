import { z } from 'zod';
import { ApiError } from '@herald/contract';

// The query parameters the list endpoints share (docs/api.md, Pagination; GET /webhook_calls and
// GET /events take dates the same way), and how a query that fails its schema is refused.

const ISO_INSTANT =
  /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/i;

/**
 * An ISO-8601 date or date-time, without a zone meaning UTC (as GET /items reads them), in years
 * 0001–9999; null for anything else. Date.parse accepted far more ("1", "March 7", years Postgres
 * cannot hold), which either meant something unintended or failed in Postgres (a 500).
 */
function parseInstant(text: string): Date | null {
  const m = ISO_INSTANT.exec(text);
  if (!m) return null;
  const [, y, mo, d, h = '0', mi = '0', s = '0', frac = '', zone] = m;
  const day = new Date(0);
  day.setUTCFullYear(Number(y), Number(mo) - 1, Number(d));
  if (day.getUTCMonth() !== Number(mo) - 1 || day.getUTCDate() !== Number(d)) return null;
  if (Number(h) > 23 || Number(mi) > 59 || Number(s) > 59) return null;
  let offsetMinutes = 0;
  if (zone && zone.toUpperCase() !== 'Z') {
    const digits = zone.slice(1).replace(':', '');
    const [hours, minutes] = [Number(digits.slice(0, 2)), Number(digits.slice(2))];
    if (hours > 15 || minutes > 59) return null;
    offsetMinutes = (zone.startsWith('-') ? -1 : 1) * (hours * 60 + minutes);
  }
  const millis = Math.floor(Number(`0${frac}`) * 1000);
  const instant = new Date(
    day.getTime() +
      ((Number(h) * 60 + Number(mi) - offsetMinutes) * 60 + Number(s)) * 1000 +
      millis,
  );
  const year = instant.getUTCFullYear();
  return year >= 1 && year <= 9999 ? instant : null;
}

const instant = z.string().transform((value, ctx) => {
  const parsed = parseInstant(value);
  if (parsed) return parsed;
  ctx.addIssue({
    code: 'custom',
    message:
      'must be an ISO-8601 date or date-time (YYYY-MM-DDThh:mm:ss, zone optional: UTC) in years 0001–9999',
  });
  return z.NEVER;
});

/** `[gt]` and/or `[lt]`, each an instant (exclusive bounds). */
export const instantRange = z.object({ gt: instant.optional(), lt: instant.optional() }).strict();

/** A decimal integer as the query string carries it: no sign, exponent, hex or blank. */
const decimalInteger = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d{1,16}$/, 'must be a decimal integer')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

/** `page[offset]` and `page[limit]` (1–500), `limit` defaulting to `defaultLimit`. */
export const pageParams = (defaultLimit: number) =>
  z
    .object({
      offset: decimalInteger(0, Number.MAX_SAFE_INTEGER).default(0),
      limit: decimalInteger(1, 500).default(defaultLimit),
    })
    .strict()
    .default({ offset: 0, limit: defaultLimit });

/**
 * The parsed query string (context(res).query) as `schema` reads it, or a 422 INVALID_PARAMS with
 * one entry per problem, each naming its parameter's path with dots (`page.limit`).
 */
export function parseQuery<T>(schema: z.ZodType<T>, query: unknown): T {
  const parsed = schema.safeParse(query);
  if (parsed.success) return parsed.data;
  throw ApiError.many(
    parsed.error.issues.map((issue) => ({
      code: 'INVALID_PARAMS' as const,
      details: { param: issue.path.join('.'), message: issue.message },
    })),
  );
}
