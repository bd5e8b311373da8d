import { BATCH_LIMITS, DELIVERY_ORDERS } from '@herald/contract/tables';
import { Check, FieldErrors, FormField, TextField } from '../components/ui.js';
import { describeMs } from '../lib/delivery-policy.js';
import { problemsUnder, type FieldProblem } from '../lib/errors.js';
import { DELIVERY_ORDER_LABELS, type FlowForm } from '../lib/flow-control.js';

/** The attribute a flow control change edits: its server complaints are cleared. */
export type FlowRoot = 'delivery_order' | 'coalesce' | 'batch';

/**
 * The editor's "Flow control" group (docs/api.md, Flow control): the delivery order, coalescing,
 * and a batch's window and size, each with the server's complaints (and the batch's ranges, as
 * typed) beside it.
 */
export function FlowFields({
  flow,
  problems,
  onChange,
}: {
  flow: FlowForm;
  problems: readonly FieldProblem[];
  onChange: (flow: FlowForm, root: FlowRoot) => void;
}) {
  const { window_ms: window, max_events: size } = BATCH_LIMITS;
  return (
    <fieldset class="group">
      <legend>Flow control</legend>
      <p class="hint">
        How the calls of one record (or upload, model…) go: in the order the events happened, merged
        while they wait, or gathered into batches. Resends, replays and tests go outside this order.
      </p>
      <FormField
        id="wh-delivery-order"
        label="Delivery order"
        problems={problemsUnder(problems, 'delivery_order')}
        hint="In order: a call waits until the previous call of its entity succeeded or failed for good, retries included; an event older than one already sent is not sent."
      >
        {(control) => (
          <select
            {...control}
            name="delivery_order"
            value={flow.deliveryOrder}
            onChange={(e) =>
              onChange({ ...flow, deliveryOrder: e.currentTarget.value }, 'delivery_order')
            }
          >
            {DELIVERY_ORDERS.map((order) => (
              <option key={order} value={order}>
                {DELIVERY_ORDER_LABELS[order]}
              </option>
            ))}
          </select>
        )}
      </FormField>
      <Check
        name="coalesce"
        checked={flow.coalesce}
        onChange={(coalesce) => onChange({ ...flow, coalesce }, 'coalesce')}
      >
        <span>
          Coalesce: while a call waits, newer events of its entity join it, so the receiver gets the
          latest state once
        </span>
      </Check>
      <FieldErrors problems={problemsUnder(problems, 'coalesce')} />
      <Check
        name="batch"
        checked={flow.batch}
        onChange={(batch) => onChange({ ...flow, batch }, 'batch')}
      >
        <span>
          Batch: send the events of a window as one call, listed in <code>events</code>
        </span>
      </Check>
      {flow.batch && (
        <div class="row-2">
          <TextField
            id="wh-batch-window"
            label="Batch window (ms)"
            problems={problemsUnder(problems, 'batch.window_ms')}
            hint={
              <>
                From the batch's first event, {window.min} to {window.max}.
                {describeMs(flow.windowMs) && <strong> {describeMs(flow.windowMs)}</strong>}
              </>
            }
            name="batch.window_ms"
            inputMode="numeric"
            value={flow.windowMs}
            onValue={(windowMs) => onChange({ ...flow, windowMs }, 'batch')}
          />
          <TextField
            id="wh-batch-max-events"
            label="Most entries per batch"
            problems={problemsUnder(problems, 'batch.max_events')}
            hint={`${size.min} to ${size.max}. Empty: ${size.default}.`}
            name="batch.max_events"
            inputMode="numeric"
            placeholder={String(size.default)}
            value={flow.maxEvents}
            onValue={(maxEvents) => onChange({ ...flow, maxEvents }, 'batch')}
          />
        </div>
      )}
      <FieldErrors problems={problemsUnder(problems, 'batch', { exact: true })} />
    </fieldset>
  );
}
