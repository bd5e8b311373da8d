import { regexCostProblem } from './regex-cost.js';
import { isObject } from './values.js';

/**
 * The field conditions of GET /items (`filter[fields]`, docs/api.md, Field filters), shared by the
 * read service, which compiles them to SQL, and by webhook matching (an events entry's `fields`,
 * docs/api.md, Events and filters), which evaluates them on an event's entity. One table says
 * which operators each field type takes and how its values compare; one function checks and
 * coerces an operand; fieldConditionHolds evaluates a condition on a JSON value the way the read
 * service's SQL does (services/read/src/query/compile.ts; item-filters.int.test.ts there holds
 * the two to the same answers). Browser-safe: imports nothing but its neighbours.
 */

/** The operators of GET /items field filters (docs/api.md, Field filters), snake_case. */
export const ITEM_FILTER_OPERATORS = [
  'eq',
  'neq',
  'gt',
  'gte',
  'lt',
  'lte',
  'in',
  'not_in',
  'any_in',
  'all_in',
  'matches',
  'not_matches',
  'exists',
  'is_blank',
  'is_present',
  'near',
] as const;
export type ItemFilterOperator = (typeof ITEM_FILTER_OPERATORS)[number];

/** How values of a target compare (drives operand coercion, the SQL and the evaluation). */
export type FilterValueKind =
  | 'text'
  | 'number'
  | 'date'
  | 'timestamp'
  | 'boolean'
  | 'status'
  | 'upload'
  | 'id_list'
  | 'upload_list'
  | 'lat_lon'
  | 'structured_text'
  | 'opaque';

export interface MatchOperand {
  pattern: string;
  caseSensitive: boolean;
  regexp: boolean;
}

export type FilterOperand =
  | { type: 'scalar'; value: string | number | boolean }
  | { type: 'list'; values: string[] }
  | { type: 'flag'; value: boolean }
  | { type: 'match'; match: MatchOperand }
  | { type: 'near'; latitude: number; longitude: number; radius: number };

/** What a condition is about, as far as its operand's domain goes. */
export type FilterTarget = { kind: 'meta'; column: string } | { kind: 'field'; fieldType: string };

export interface FilterSpec {
  operators: readonly ItemFilterOperator[];
  kind: FilterValueKind;
  sortable: boolean;
}

/** Values in a list operand, at most. */
const FILTER_LIST_MAX = 1000;

type Operators = readonly ItemFilterOperator[];
const NUMERIC_OPS: Operators = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'exists'];
const TEXT_OPS: Operators = ['matches', 'not_matches', 'is_blank', 'is_present', 'exists'];
const STRING_OPS: Operators = ['eq', 'neq', 'in', 'not_in', ...TEXT_OPS];
const LINK_OPS: Operators = ['eq', 'neq', 'in', 'not_in', 'exists'];
const LINKS_OPS: Operators = ['eq', 'any_in', 'all_in', 'not_in', 'exists'];

/** docs/api.md, Field filters: operators and comparison kind per field type. */
export const FIELD_TYPE_FILTERS: Readonly<Record<string, FilterSpec>> = {
  boolean: { operators: ['eq'], kind: 'boolean', sortable: true },
  integer: { operators: NUMERIC_OPS, kind: 'number', sortable: true },
  float: { operators: NUMERIC_OPS, kind: 'number', sortable: true },
  date: { operators: NUMERIC_OPS, kind: 'date', sortable: true },
  date_time: { operators: NUMERIC_OPS, kind: 'timestamp', sortable: true },
  string: { operators: STRING_OPS, kind: 'text', sortable: true },
  slug: { operators: ['eq', 'neq', 'in', 'not_in'], kind: 'text', sortable: true },
  text: { operators: TEXT_OPS, kind: 'text', sortable: false },
  structured_text: { operators: TEXT_OPS, kind: 'structured_text', sortable: false },
  link: { operators: LINK_OPS, kind: 'text', sortable: false },
  file: { operators: LINK_OPS, kind: 'upload', sortable: false },
  links: { operators: LINKS_OPS, kind: 'id_list', sortable: false },
  gallery: { operators: LINKS_OPS, kind: 'upload_list', sortable: false },
  lat_lon: { operators: ['near', 'exists'], kind: 'lat_lon', sortable: false },
  color: { operators: ['exists'], kind: 'opaque', sortable: false },
  json: { operators: ['exists'], kind: 'opaque', sortable: false },
  seo: { operators: ['exists'], kind: 'opaque', sortable: false },
  video: { operators: ['exists'], kind: 'opaque', sortable: false },
  rich_text: { operators: [], kind: 'opaque', sortable: false },
  single_block: { operators: [], kind: 'opaque', sortable: false },
};

/** A field type this table does not know takes `exists` only. */
const UNKNOWN_FIELD_TYPE: FilterSpec = { operators: ['exists'], kind: 'opaque', sortable: false };

export function fieldTypeFilters(fieldType: string): FilterSpec {
  return FIELD_TYPE_FILTERS[fieldType] ?? UNKNOWN_FIELD_TYPE;
}

/** The official client types mix spellings: camelCase is accepted for every snake_case name. */
function normalizeFilterOperator(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

const OPERATORS: ReadonlySet<string> = new Set(ITEM_FILTER_OPERATORS);

/** An operator name (either spelling) as the snake_case operator, or null if it is none. */
export function filterOperator(name: string): ItemFilterOperator | null {
  const normalized = normalizeFilterOperator(name);
  return OPERATORS.has(normalized) ? (normalized as ItemFilterOperator) : null;
}

const STATUSES = new Set(['draft', 'updated', 'published']);
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?$/i;
const INTEGER = /^-?\d{1,30}$/;
const FLOAT = /^-?(\d{1,30}(\.\d{0,30})?|\.\d{1,30})(e[+-]?\d{1,3})?$/i;

function validDate(y: string, m: string, d: string): boolean {
  const year = Number(y);
  const month = Number(m);
  const day = Number(d);
  if (year < 1 || month < 1 || month > 12 || day < 1) return false;
  return day <= new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/** An ISO-8601 date-time operand as a canonical UTC string; no zone means UTC (seed rule 5). */
export function parseDateTime(text: string): string | null {
  const m = DATE_TIME.exec(text);
  if (!m) return null;
  const [, y, mo, d, h, mi, s, frac, zone] = m;
  if (!validDate(y!, mo!, d!) || Number(h) > 23 || Number(mi) > 59 || Number(s ?? 0) > 59) {
    return null;
  }
  let offsetMinutes = 0;
  if (zone && zone.toUpperCase() !== 'Z') {
    const sign = zone.startsWith('-') ? -1 : 1;
    const digits = zone.slice(1).replace(':', '');
    const hours = Number(digits.slice(0, 2));
    const minutes = Number(digits.slice(2));
    if (hours > 15 || minutes > 59) return null;
    offsetMinutes = sign * (hours * 60 + minutes);
  }
  // setUTCFullYear, not Date.UTC, which reads the years 0–99 as 1900–1999.
  const date = new Date(0);
  date.setUTCFullYear(Number(y), Number(mo) - 1, Number(d));
  date.setUTCHours(Number(h), Number(mi) - offsetMinutes, Number(s ?? 0), 0);
  // A zone can carry 0001-01-01 or 9999-12-31 out of the years Postgres and ISO strings hold.
  if (date.getUTCFullYear() < 1 || date.getUTCFullYear() > 9999) return null;
  // Sub-millisecond digits are kept by Postgres (microseconds); keep up to 6.
  const micros = (frac ?? '').slice(1, 7).padEnd(6, '0');
  return `${date.toISOString().slice(0, 19)}.${micros}Z`;
}

/** Called with why an operand is refused; throws (each caller its own error). */
export type RefuseOperand = (why: string) => never;

/**
 * Checks an operand of `operator` on a target of `kind` and returns it coerced; refuses it through
 * `bad`. The operator must be one the target takes (the caller checks it against the table).
 */
export function coerceFilterOperand(
  target: FilterTarget,
  kind: FilterValueKind,
  operator: ItemFilterOperator,
  raw: unknown,
  bad: RefuseOperand,
): FilterOperand {
  switch (operator) {
    case 'exists':
    case 'is_blank':
    case 'is_present': {
      if (raw === true || raw === 'true') return { type: 'flag', value: true };
      if (raw === false || raw === 'false') return { type: 'flag', value: false };
      return bad('operand must be "true" or "false"');
    }
    case 'in':
    case 'not_in':
    case 'any_in':
    case 'all_in':
      return { type: 'list', values: coerceList(kind, raw, bad) };
    case 'eq':
      if (kind === 'id_list' || kind === 'upload_list') {
        return { type: 'list', values: coerceList(kind, raw, bad) };
      }
      return { type: 'scalar', value: coerceScalar(target, kind, raw, bad) };
    case 'neq':
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte':
      return { type: 'scalar', value: coerceScalar(target, kind, raw, bad) };
    case 'matches':
    case 'not_matches': {
      if (typeof raw === 'string') {
        const problem = regexCostProblem(raw);
        if (problem) return bad(`regular expression refused: ${problem}`);
        return { type: 'match', match: { pattern: raw, caseSensitive: false, regexp: true } };
      }
      if (!isObject(raw)) return bad('operand must be {pattern, case_sensitive, regexp}');
      const options: Record<string, unknown> = {};
      for (const [key, value] of Object.entries(raw)) options[normalizeFilterOperator(key)] = value;
      for (const key of Object.keys(options)) {
        if (!['pattern', 'case_sensitive', 'regexp'].includes(key)) {
          bad(`unknown key "${key}" (pattern, case_sensitive, regexp)`);
        }
      }
      const pattern = options['pattern'];
      if (typeof pattern !== 'string') return bad('pattern must be a string');
      const flag = (key: string, fallback: boolean): boolean => {
        const value = options[key];
        if (value === undefined) return fallback;
        if (value === true || value === 'true') return true;
        if (value === false || value === 'false') return false;
        return bad(`${key} must be "true" or "false"`);
      };
      const match = {
        pattern,
        caseSensitive: flag('case_sensitive', false),
        regexp: flag('regexp', true),
      };
      const problem = match.regexp ? regexCostProblem(pattern) : null;
      if (problem) return bad(`regular expression refused: ${problem}`);
      return { type: 'match', match };
    }
    case 'near': {
      if (!isObject(raw)) return bad('operand must be {latitude, longitude, radius}');
      const number = (key: string, max: number): number => {
        const value = raw[key];
        let n = NaN;
        if (typeof value === 'number') n = value;
        else if (typeof value === 'string' && FLOAT.test(value)) n = Number(value);
        if (!Number.isFinite(n) || Math.abs(n) > max) {
          return bad(`${key} must be a number within ±${max}`);
        }
        return n;
      };
      const latitude = number('latitude', 90);
      const longitude = number('longitude', 180);
      const radius = number('radius', 4e7);
      if (radius < 0) return bad('radius must be ≥ 0 (metres)');
      return { type: 'near', latitude, longitude, radius };
    }
  }
}

function coerceList(kind: FilterValueKind, raw: unknown, bad: RefuseOperand): string[] {
  let values: unknown[];
  if (Array.isArray(raw)) values = raw;
  else if (typeof raw === 'string') values = raw === '' ? [] : raw.split(',');
  else if (isObject(raw) && Object.keys(raw).every((k) => /^\d+$/.test(k))) {
    values = Object.values(raw); // qs turns a[1001]=x into an object beyond its array limit
  } else return bad('operand must be a list (key[]=a&key[]=b, or comma-separated)');
  if (values.length > FILTER_LIST_MAX) bad(`at most ${FILTER_LIST_MAX} values`);
  return values.map((value) => {
    if (typeof value !== 'string') return bad('list elements must be strings');
    if (kind === 'status' && !STATUSES.has(value)) {
      return bad(`"${value}" is not a status (draft, updated, published)`);
    }
    return value;
  });
}

/**
 * The numbers a target holds: what ingest stores in an integer field (safe integers), a float
 * field (finite doubles) and the position column (a Postgres integer). An operand outside them
 * could only ever match nothing (or everything), so it is refused rather than answered.
 */
function numberDomain(target: FilterTarget): { integer: boolean; max: number; name: string } {
  if (target.kind === 'meta') return { integer: true, max: 2 ** 31 - 1, name: 'position' };
  if (target.fieldType === 'integer') {
    return { integer: true, max: Number.MAX_SAFE_INTEGER, name: 'an integer field' };
  }
  return { integer: false, max: Number.MAX_VALUE, name: 'a float field' };
}

function coerceScalar(
  target: FilterTarget,
  kind: FilterValueKind,
  raw: unknown,
  bad: RefuseOperand,
): string | number | boolean {
  if (typeof raw !== 'string' && typeof raw !== 'number' && typeof raw !== 'boolean') {
    return bad('operand must be a single value');
  }
  const text = String(raw);
  switch (kind) {
    case 'boolean':
      if (text === 'true') return true;
      if (text === 'false') return false;
      return bad('operand must be "true" or "false"');
    case 'number': {
      const domain = numberDomain(target);
      if (domain.integer ? !INTEGER.test(text) : !INTEGER.test(text) && !FLOAT.test(text)) {
        return bad(`"${text}" is not ${domain.integer ? 'an integer' : 'a number'}`);
      }
      // position's lower bound is one below -max (a Postgres integer); no position is that low.
      if (!(Math.abs(Number(text)) <= domain.max)) {
        return bad(`"${text}" is outside the values of ${domain.name} (±${domain.max})`);
      }
      return text;
    }
    case 'date': {
      const m = DATE.exec(text);
      if (!m || !validDate(m[1]!, m[2]!, m[3]!)) return bad(`"${text}" is not a date YYYY-MM-DD`);
      return text;
    }
    case 'timestamp': {
      const iso = parseDateTime(text);
      if (iso === null) {
        return bad(
          `"${text}" is not an ISO-8601 date-time (YYYY-MM-DDThh:mm:ss, zone optional) in years 0001–9999`,
        );
      }
      return iso;
    }
    case 'status':
      if (!STATUSES.has(text)) return bad(`"${text}" is not a status (draft, updated, published)`);
      return text;
    case 'text':
    case 'upload':
    case 'structured_text':
    case 'opaque':
    case 'id_list':
    case 'upload_list':
    case 'lat_lon':
      return text;
  }
}

// ---------------------------------------------------------------------------------------------
// Evaluation on a JSON value, as compile.ts's SQL reads the stored attributes.

/** `->>`: the text of a JSON value (a string as itself), null for a missing value or JSON null. */
function jsonText(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value === 'string') return value;
  return JSON.stringify(value);
}

/** herald_numeric (migration 004): a JSON number, else null. */
const jsonNumber = (value: unknown): number | null => (typeof value === 'number' ? value : null);

/** herald_timestamptz (migration 004) as a canonical string that sorts as the time does. */
function jsonTimestamp(value: unknown): string | null {
  return typeof value === 'string' ? parseDateTime(value) : null;
}

const uploadId = (value: unknown): string | null =>
  isObject(value) ? jsonText(value['upload_id']) : null;

/** The strings of a JSON array (what `?|` and `?&` look at); null when the value is no array. */
const arrayStrings = (value: unknown): string[] | null =>
  Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : null;

/** `lax $.**.value` strings: the text of a structured_text value's spans. */
function dastTexts(value: unknown, out: string[] = [], depth = 0): string[] {
  if (depth > 64 || value === null || typeof value !== 'object') return out;
  if (Array.isArray(value)) {
    for (const item of value) dastTexts(item, out, depth + 1);
    return out;
  }
  for (const [key, item] of Object.entries(value)) {
    if (key === 'value' && typeof item === 'string') out.push(item);
    dastTexts(item, out, depth + 1);
  }
  return out;
}

/** Compiled regular expressions, by flags and pattern (operands repeat across events). */
const regexps = new Map<string, RegExp | null>();
const REGEXP_CACHE_MAX = 10_000;

/**
 * A `matches` pattern as a JavaScript RegExp, null if JavaScript cannot compile it. Postgres AREs
 * and JavaScript patterns agree on what regexCostProblem lets through, except for a few escapes
 * (`\m`, `\M`, `\y`) and classes JavaScript lacks; webhook validation refuses those.
 */
export function compileMatchPattern(pattern: string, caseSensitive: boolean): RegExp | null {
  const key = `${caseSensitive ? 's' : 'i'}${pattern}`;
  let compiled = regexps.get(key);
  if (compiled === undefined) {
    try {
      compiled = new RegExp(pattern, caseSensitive ? '' : 'i');
    } catch {
      compiled = null;
    }
    if (regexps.size >= REGEXP_CACHE_MAX) regexps.clear();
    regexps.set(key, compiled);
  }
  return compiled;
}

function textMatches(text: string, match: MatchOperand): boolean {
  if (match.regexp)
    return compileMatchPattern(match.pattern, match.caseSensitive)?.test(text) ?? false;
  return match.caseSensitive
    ? text.includes(match.pattern)
    : text.toLowerCase().includes(match.pattern.toLowerCase());
}

/** A value of `kind` as compile.ts's valueExpression compares it (null: SQL NULL). */
function scalarOf(kind: FilterValueKind, value: unknown): string | number | null {
  switch (kind) {
    case 'number':
      return jsonNumber(value);
    case 'timestamp':
      return jsonTimestamp(value);
    case 'upload':
      return uploadId(value);
    case 'text':
    case 'date':
    case 'boolean':
    case 'status':
    case 'id_list':
    case 'upload_list':
    case 'lat_lon':
    case 'structured_text':
    case 'opaque':
      return jsonText(value);
  }
}

/** The operand as the value it is compared with (numbers as numbers). */
function operandOf(kind: FilterValueKind, value: string | number | boolean): string | number {
  if (kind === 'number') return Number(value);
  return String(value);
}

const EARTH_RADIUS_M = 6371008.8;
const radians = (degrees: number) => (degrees * Math.PI) / 180;

/**
 * What `exists` asks of a value of `kind` (the same rule in memory and in SQL): a list, that it
 * has an element; a JSON value, that it is there and not null; a scalar, that it reads as one.
 */
export function presenceOf(kind: FilterValueKind): 'list' | 'json' | 'scalar' {
  switch (kind) {
    case 'id_list':
    case 'upload_list':
      return 'list';
    case 'lat_lon':
    case 'structured_text':
    case 'opaque':
      return 'json';
    case 'text':
    case 'number':
    case 'date':
    case 'timestamp':
    case 'boolean':
    case 'status':
    case 'upload':
      return 'scalar';
  }
}

/**
 * Whether a condition holds for a field's value (`undefined` when the record has no such key),
 * with the semantics of GET /items (docs/api.md, Field filters): `neq`, `not_in` and
 * `not_matches` hold for a missing value, a missing boolean counts as `false`.
 */
export function fieldConditionHolds(
  kind: FilterValueKind,
  operator: ItemFilterOperator,
  operand: FilterOperand,
  value: unknown,
): boolean {
  switch (operator) {
    case 'eq': {
      if (operand.type === 'list') {
        if (!Array.isArray(value)) return false;
        const ids =
          kind === 'id_list' ? value : value.map((e) => (isObject(e) ? e['upload_id'] : undefined));
        return (
          ids.length === operand.values.length && ids.every((id, i) => id === operand.values[i])
        );
      }
      if (operand.type !== 'scalar') break;
      if (kind === 'boolean') return (jsonText(value) === 'true') === operand.value;
      const v = scalarOf(kind, value);
      return v !== null && v === operandOf(kind, operand.value);
    }
    case 'neq': {
      if (operand.type !== 'scalar') break;
      const v = scalarOf(kind, value);
      return v === null || v !== operandOf(kind, operand.value);
    }
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte': {
      if (operand.type !== 'scalar') break;
      const v = scalarOf(kind, value);
      if (v === null) return false;
      const o = operandOf(kind, operand.value);
      if (operator === 'gt') return v > o;
      if (operator === 'gte') return v >= o;
      if (operator === 'lt') return v < o;
      return v <= o;
    }
    case 'in': {
      if (operand.type !== 'list') break;
      const v = scalarOf(kind, value);
      return v !== null && operand.values.includes(String(v));
    }
    case 'not_in': {
      if (operand.type !== 'list') break;
      if (kind === 'id_list')
        return !(arrayStrings(value) ?? []).some((id) => operand.values.includes(id));
      if (kind === 'upload_list') {
        return !(Array.isArray(value) ? value : []).some((e) => {
          const id = uploadId(e);
          return id !== null && operand.values.includes(id);
        });
      }
      const v = scalarOf(kind, value);
      return v === null || !operand.values.includes(String(v));
    }
    case 'any_in': {
      if (operand.type !== 'list') break;
      if (kind === 'id_list')
        return (arrayStrings(value) ?? []).some((id) => operand.values.includes(id));
      return (Array.isArray(value) ? value : []).some((e) => {
        const id = uploadId(e);
        return id !== null && operand.values.includes(id);
      });
    }
    case 'all_in': {
      if (operand.type !== 'list' || !Array.isArray(value)) return false;
      const ids = kind === 'id_list' ? (arrayStrings(value) ?? []) : value.map(uploadId);
      return operand.values.every((id) => ids.includes(id));
    }
    case 'matches':
    case 'not_matches': {
      if (operand.type !== 'match') break;
      let matched: boolean;
      if (kind === 'structured_text') {
        matched = dastTexts(value).some((text) => textMatches(text, operand.match));
      } else {
        const text = jsonText(value);
        matched = text !== null && textMatches(text, operand.match);
      }
      return operator === 'matches' ? matched : !matched;
    }
    case 'is_blank':
    case 'is_present': {
      if (operand.type !== 'flag') break;
      const blank =
        kind === 'structured_text'
          ? !dastTexts(value).some((text) => text !== '')
          : (jsonText(value) ?? '') === '';
      const wantBlank = (operator === 'is_blank') === operand.value;
      return wantBlank === blank;
    }
    case 'exists': {
      if (operand.type !== 'flag') break;
      let present: boolean;
      switch (presenceOf(kind)) {
        case 'list':
          present = Array.isArray(value) && value.length > 0;
          break;
        case 'json':
          present = value !== undefined && value !== null;
          break;
        case 'scalar':
          present = scalarOf(kind, value) !== null;
          break;
      }
      return present === operand.value;
    }
    case 'near': {
      if (operand.type !== 'near' || !isObject(value)) return false;
      const lat = jsonNumber(value['latitude']);
      const lon = jsonNumber(value['longitude']);
      if (lat === null || lon === null) return false;
      // Haversine on a sphere of the Earth's mean radius, in metres, as compile.ts.
      const h =
        Math.sin(radians(lat - operand.latitude) / 2) ** 2 +
        Math.cos(radians(operand.latitude)) *
          Math.cos(radians(lat)) *
          Math.sin(radians(lon - operand.longitude) / 2) ** 2;
      return 2 * EARTH_RADIUS_M * Math.asin(Math.min(1, Math.sqrt(h))) <= operand.radius;
    }
  }
  // coerceFilterOperand pairs every operator with its operand type; reaching here is a bug.
  throw new Error(`operator ${operator} got a ${operand.type} operand`);
}
