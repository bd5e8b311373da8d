import { ITEM_FILTER_OPERATORS } from '@herald/contract/tables';
import type { FieldProblem } from '../lib/errors.js';
import type { ConditionRow } from '../lib/field-conditions.js';
import { FieldErrors, Options, TextInput } from './ui.js';

/**
 * One field condition (field api_key, one of GET /items' operators, operand): a records filter
 * or a webhook entry's `fields`. `name` prefixes the controls' labels ("Filter 1": "Filter 1
 * field", "Filter 1 operator", "Filter 1 value").
 */
export function ConditionRowEditor({
  name,
  row,
  problems = [],
  onChange,
  onRemove,
}: {
  name: string;
  row: ConditionRow;
  problems?: readonly FieldProblem[];
  onChange: (patch: Partial<ConditionRow>) => void;
  onRemove: () => void;
}) {
  // An operator stored in another spelling (camelCase is accepted) stays selectable.
  const operators = (ITEM_FILTER_OPERATORS as readonly string[]).includes(row.operator)
    ? ITEM_FILTER_OPERATORS
    : [...ITEM_FILTER_OPERATORS, row.operator];
  const invalid = problems.length > 0 ? true : undefined;
  return (
    <div class="filter-row">
      <TextInput
        aria-label={`${name} field`}
        placeholder="field api_key"
        class="mono condition-field"
        value={row.field}
        aria-invalid={invalid}
        onValue={(field) => onChange({ field })}
      />
      <select
        aria-label={`${name} operator`}
        value={row.operator}
        onChange={(e) => onChange({ operator: e.currentTarget.value })}
      >
        <Options values={operators} />
      </select>
      <TextInput
        aria-label={`${name} value`}
        class="grow"
        placeholder={
          row.operator === 'near' ? 'latitude, longitude, radius' : 'value (lists: a, b)'
        }
        value={row.value}
        aria-invalid={invalid}
        onValue={(value) => onChange({ value })}
      />
      <button type="button" class="button button-small button-quiet" onClick={onRemove}>
        Remove
      </button>
      <FieldErrors problems={problems} />
    </div>
  );
}
