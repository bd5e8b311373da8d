import {
  coerceFilterOperand,
  fieldConditionHolds,
  fieldTypeFilters,
  filterOperator,
  type FilterOperand,
  type FilterValueKind,
  type ItemFilterOperator,
} from './item-filters.js';
import { BLOCK_FIELD_TYPES, mapBlockRefs, mapFieldValue, type ModelField } from './items.js';
import { isObject } from './values.js';
import type { WebhookEventEntry } from './webhooks.js';

/**
 * Field-aware matching (extension, docs/api.md, Events and filters): what an `item` event changed
 * and holds, and whether an events entry's content keys (`changed_fields`, `locales`,
 * `record_status`, `fields`) hold for it. Pure: delivery's matcher compiles each entry once
 * (compileContentFilter) and describes each event once (describeItemEvent), lazily, only when an
 * entry with content keys could match it.
 */

/**
 * What an event changed, field by field: a field absent did not change; a changed field maps to
 * the locales whose value changed (localized fields), or to null (a field that is not localized,
 * or a localized value that is not an object by locale).
 */
export type ChangeSet = ReadonlyMap<string, ReadonlySet<string> | null>;

/** JSON equality, ignoring the order of object keys (jsonb reorders them). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const other = b as unknown[];
    return a.length === other.length && a.every((item, i) => jsonEqual(item, other[i]));
  }
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  const keys = Object.keys(left);
  if (keys.length !== Object.keys(right).length) return false;
  return keys.every((key) => Object.hasOwn(right, key) && jsonEqual(left[key], right[key]));
}

/**
 * The fields whose value differs between two versions of a record's attributes, per locale when
 * the field is localized (`localized(apiKey)`). A key missing on one side and present on the
 * other (null included) counts as changed.
 */
export function describeChanges(
  previous: Readonly<Record<string, unknown>>,
  next: Readonly<Record<string, unknown>>,
  localized: (apiKey: string) => boolean,
): ChangeSet {
  const changes = new Map<string, ReadonlySet<string> | null>();
  const consider = (key: string) => {
    if (changes.has(key)) return;
    const before = previous[key];
    const after = next[key];
    const had = Object.hasOwn(previous, key);
    const has = Object.hasOwn(next, key);
    if (had === has && jsonEqual(before, after)) return;
    if (!localized(key)) {
      changes.set(key, null);
      return;
    }
    const beforeByLocale = isObject(before) ? before : before == null ? {} : null;
    const afterByLocale = isObject(after) ? after : after == null ? {} : null;
    if (!beforeByLocale || !afterByLocale) {
      changes.set(key, null);
      return;
    }
    const locales = new Set<string>();
    for (const locale of new Set([...Object.keys(beforeByLocale), ...Object.keys(afterByLocale)])) {
      const was = Object.hasOwn(beforeByLocale, locale);
      const is = Object.hasOwn(afterByLocale, locale);
      if (was !== is || !jsonEqual(beforeByLocale[locale], afterByLocale[locale])) {
        locales.add(locale);
      }
    }
    // {} → null: the field changed, but no locale's value did.
    changes.set(key, locales.size > 0 ? locales : null);
  };
  for (const key of Object.keys(previous)) consider(key);
  for (const key of Object.keys(next)) consider(key);
  return changes;
}

/** An item event as far as content matching reads it. */
export interface ItemEventContent {
  /** The record's attributes as the event gives them (`entity.attributes`, `{}` if none). */
  attributes: Readonly<Record<string, unknown>>;
  /** What changed; null when no previous version is known (docs/api.md, Events and filters). */
  changes: ChangeSet | null;
  /** The record's status after the event, as Herald gives it; null when unknown (a delete). */
  status: string | null;
  /** A field of the record's model, by api_key (undefined: the model has no such field). */
  field: (apiKey: string) => ModelField | undefined;
}

/** What describeItemEvent reads of a stored event. */
export interface ItemEventVersions {
  entity: unknown;
  previousEntity: unknown;
  /** The attributes of the version the event replaced, as Herald stored them (migration 022). */
  previousAttributes: Record<string, unknown> | null;
  recordStatus: string | null;
}

const attributesOf = (entity: unknown): Record<string, unknown> | null => {
  if (!isObject(entity)) return null;
  const attributes = entity['attributes'];
  return isObject(attributes) ? attributes : null;
};

const isBlockObject = (ref: unknown): ref is { id: string } =>
  isObject(ref) && typeof ref['id'] === 'string';

/**
 * An item event's content for matching: the previous version is the event's `previous_entity`
 * when it carried one, else the version Herald had stored before applying it (`{}` when the
 * record was new; null for an event stored before migration 022, whose changes are unknown).
 * Herald stores block fields as block ids, so against the stored version the event's expanded
 * blocks are compared by id.
 */
export function describeItemEvent(
  event: ItemEventVersions,
  fields: readonly ModelField[],
): ItemEventContent {
  const byKey = new Map(fields.map((f) => [f.apiKey, f]));
  let attributes = attributesOf(event.entity) ?? {};
  const given = event.previousEntity == null ? null : (attributesOf(event.previousEntity) ?? {});
  const previous = given ?? event.previousAttributes;
  if (given === null && previous !== null) attributes = collapseBlocks(attributes, fields);
  return {
    attributes,
    changes:
      previous === null
        ? null
        : describeChanges(previous, attributes, (key) => byKey.get(key)?.localized ?? false),
    status: event.recordStatus,
    field: (apiKey) => byKey.get(apiKey),
  };
}

/** Block fields with their expanded blocks replaced by their ids, as Herald stores them. */
function collapseBlocks(
  attributes: Record<string, unknown>,
  fields: readonly ModelField[],
): Record<string, unknown> {
  let result = attributes;
  for (const field of fields) {
    if (!BLOCK_FIELD_TYPES.has(field.fieldType) || !Object.hasOwn(attributes, field.apiKey)) {
      continue;
    }
    if (result === attributes) result = { ...attributes };
    result[field.apiKey] = mapFieldValue(field, attributes[field.apiKey], (v) =>
      mapBlockRefs(field.fieldType, v, (ref) => (isBlockObject(ref) ? ref.id : ref)),
    );
  }
  return result;
}

/** One condition of an entry's `fields`, resolved per field type when first evaluated. */
interface FieldCondition {
  apiKey: string;
  operator: ItemFilterOperator;
  raw: unknown;
  /** By field type: the coerced operand, or null when the field type cannot take it. */
  resolved: Map<string, { kind: FilterValueKind; operand: FilterOperand } | null>;
}

/** An entry's content keys, compiled once per index build. */
export interface ContentFilter {
  changedFields: ReadonlySet<string> | null;
  locales: ReadonlySet<string> | null;
  statuses: ReadonlySet<string> | null;
  conditions: FieldCondition[];
}

const nonEmpty = (values: readonly string[] | null | undefined): ReadonlySet<string> | null =>
  values && values.length > 0 ? new Set(values) : null;

/** The entry's content filter, or null when it has no content keys (it then matches as before). */
export function compileContentFilter(entry: WebhookEventEntry): ContentFilter | null {
  const conditions: FieldCondition[] = [];
  for (const [apiKey, operators] of Object.entries(entry.fields ?? {})) {
    for (const [name, raw] of Object.entries(operators)) {
      const operator = filterOperator(name);
      // Validated when stored; an unknown operator could only come from an older Herald.
      if (operator) conditions.push({ apiKey, operator, raw, resolved: new Map() });
    }
  }
  const filter: ContentFilter = {
    changedFields: nonEmpty(entry.changed_fields),
    locales: nonEmpty(entry.locales),
    statuses: nonEmpty(entry.record_status),
    conditions,
  };
  const empty =
    !filter.changedFields && !filter.locales && !filter.statuses && conditions.length === 0;
  return empty ? null : filter;
}

class Unresolvable extends Error {}
const refuse = (): never => {
  throw new Unresolvable();
};

function resolve(condition: FieldCondition, fieldType: string) {
  let resolved = condition.resolved.get(fieldType);
  if (resolved === undefined) {
    const spec = fieldTypeFilters(fieldType);
    resolved = null;
    if (spec.operators.includes(condition.operator)) {
      try {
        const operand = coerceFilterOperand(
          { kind: 'field', fieldType },
          spec.kind,
          condition.operator,
          condition.raw,
          refuse,
        );
        resolved = { kind: spec.kind, operand };
      } catch (error) {
        if (!(error instanceof Unresolvable)) throw error;
      }
    }
    condition.resolved.set(fieldType, resolved);
  }
  return resolved;
}

function conditionHolds(
  condition: FieldCondition,
  content: ItemEventContent,
  locales: ReadonlySet<string> | null,
): boolean {
  const field = content.field(condition.apiKey);
  // A field the model does not have, or an operand its type cannot take: the condition fails.
  const resolved = field ? resolve(condition, field.fieldType) : null;
  if (!field || !resolved) return false;
  const value = content.attributes[condition.apiKey];
  const holds = (v: unknown) =>
    fieldConditionHolds(resolved.kind, condition.operator, resolved.operand, v);
  if (!field.localized) return holds(value);
  // Localized: it holds in some locale (of the entry's `locales` when it lists some).
  const byLocale = isObject(value) ? value : {};
  const candidates = locales ? [...locales] : Object.keys(byLocale);
  if (candidates.length === 0) return holds(undefined);
  return candidates.some((locale) => holds(byLocale[locale]));
}

/** Whether some change is in `fields` (any field when null) and in `locales` (any when null). */
function changedWithin(
  changes: ChangeSet,
  fields: ReadonlySet<string> | null,
  locales: ReadonlySet<string> | null,
): boolean {
  const inLocales = (changed: ReadonlySet<string> | null) => {
    if (!locales) return true;
    // A field that is not localized belongs to no locale: it counts only when fields are named.
    if (changed === null) return fields !== null;
    for (const locale of changed) if (locales.has(locale)) return true;
    return false;
  };
  if (fields) {
    for (const key of fields) {
      const changed = changes.get(key);
      if (changed !== undefined && inLocales(changed)) return true;
    }
    return false;
  }
  for (const changed of changes.values()) if (inLocales(changed)) return true;
  return false;
}

/**
 * Whether an entry's content keys hold for an item event (docs/api.md, Events and filters):
 * every key given must hold; `changed_fields` and `locales` need a known previous version.
 */
export function contentFilterHolds(filter: ContentFilter, content: ItemEventContent): boolean {
  if (filter.statuses && !(content.status !== null && filter.statuses.has(content.status))) {
    return false;
  }
  if (filter.changedFields || filter.locales) {
    if (!content.changes) return false;
    if (!changedWithin(content.changes, filter.changedFields, filter.locales)) return false;
  }
  return filter.conditions.every((c) => conditionHolds(c, content, filter.locales));
}
