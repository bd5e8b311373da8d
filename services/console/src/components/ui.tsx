import type { ComponentChildren, InputHTMLAttributes } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { Resource } from '../hooks.js';
import type { ApiFailure } from '../lib/api.js';
import type { FieldProblem } from '../lib/errors.js';

export function Loading({ label = 'Loading…' }: { label?: string }) {
  return (
    <p class="state state-loading" role="status" aria-live="polite">
      <span class="spinner" aria-hidden="true" /> {label}
    </p>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <div class="state state-empty">{children}</div>;
}

/** A resource's failure, with a way to try again, or a spinner until its first answer. */
export function LoadState({ resource, label }: { resource: Resource<unknown>; label: string }) {
  return (
    <>
      {resource.error && <ErrorNote error={resource.error} onRetry={() => resource.reload()} />}
      {resource.loading && !resource.data && <Loading label={label} />}
    </>
  );
}

/** A failed request, said where it happened, with the request id to quote in a bug report. */
export function ErrorNote({ error, onRetry }: { error: ApiFailure; onRetry?: () => void }) {
  return (
    <div class="note note-error" role="alert">
      <p>{error.message}</p>
      {error.requestId && <p class="muted small">Request id {error.requestId}</p>}
      {onRetry && (
        <button type="button" class="button" onClick={onRetry}>
          Try again
        </button>
      )}
    </div>
  );
}

export function FieldErrors({ problems, id }: { problems: readonly FieldProblem[]; id?: string }) {
  if (problems.length === 0) return null;
  return (
    <ul class="field-errors" id={id} role="alert">
      {problems.map((problem) => (
        <li key={`${problem.field}:${problem.message}`} data-field={problem.field}>
          {problem.message}
        </li>
      ))}
    </ul>
  );
}

const STATUS_LABEL: Record<string, string> = {
  success: 'Success',
  failed: 'Failed',
  pending: 'Pending',
  rescheduled: 'Retrying',
  enabled: 'Enabled',
  disabled: 'Disabled',
  published: 'Published',
  draft: 'Draft',
  updated: 'Updated',
  queued: 'Queued',
  running: 'Running',
  completed: 'Completed',
  cancelled: 'Cancelled',
  'circuit-closed': 'Closed',
  'circuit-open': 'Open',
  'circuit-half_open': 'Half-open',
};

/**
 * A screen of the console: a section labelled by its h1 (`id`-title); `back` is the crumb to the
 * list it belongs to, `actions` stand beside the title.
 */
export function Screen({
  id,
  title,
  titleClass,
  back,
  actions,
  children,
}: {
  id: string;
  title: ComponentChildren;
  titleClass?: string;
  back?: { href: string; label: string };
  actions?: ComponentChildren;
  children?: ComponentChildren;
}) {
  return (
    <section aria-labelledby={`${id}-title`}>
      {back && (
        <p class="crumbs">
          <a href={back.href}>{`← ${back.label}`}</a>
        </p>
      )}
      <div class="page-head">
        <h1 id={`${id}-title`} class={titleClass}>
          {title}
        </h1>
        {actions}
      </div>
      {children}
    </section>
  );
}

/** The filters of a list: a form that never leaves the page; `onSubmit` applies what was typed. */
export function FilterForm({
  label,
  onSubmit,
  children,
}: {
  label: string;
  onSubmit?: () => void;
  children: ComponentChildren;
}) {
  return (
    <form
      class="filters card"
      aria-label={label}
      onSubmit={(e) => {
        e.preventDefault();
        onSubmit?.();
      }}
    >
      {children}
    </form>
  );
}

/** A row of a table of webhook calls, led by the call's id linking to the call. */
export function CallRow({ id, children }: { id: string; children: ComponentChildren }) {
  return (
    <tr data-call-id={id}>
      <td data-label="Call">
        <a class="strong mono" href={`#/calls/${id}`}>
          #{id}
        </a>
      </td>
      {children}
    </tr>
  );
}

/**
 * A button for an action that cannot be pressed again while busy, and says `busyLabel` (if any)
 * meanwhile.
 */
export function BusyButton({
  class: className,
  busy,
  busyLabel,
  onClick,
  children,
}: {
  class: string;
  busy: boolean;
  busyLabel?: string;
  onClick: () => void;
  children: ComponentChildren;
}) {
  return (
    <button type="button" class={className} disabled={busy} onClick={onClick}>
      {busy && busyLabel ? busyLabel : children}
    </button>
  );
}

export function Badge({ status, title }: { status: string; title?: string }) {
  return (
    <span class={`badge badge-${status}`} title={title}>
      {STATUS_LABEL[status] ?? status}
    </span>
  );
}

export function Pager({
  offset,
  limit,
  total,
  onChange,
}: {
  offset: number;
  limit: number;
  total: number;
  onChange: (offset: number) => void;
}) {
  if (total === 0) return null;
  const last = Math.min(offset + limit, total);
  return (
    <nav class="pager" aria-label="Pages">
      <button
        type="button"
        class="button"
        disabled={offset === 0}
        onClick={() => onChange(Math.max(0, offset - limit))}
      >
        ← Previous
      </button>
      <span aria-live="polite">
        {offset + 1}–{last} of {total}
      </span>
      <button
        type="button"
        class="button"
        disabled={last >= total}
        onClick={() => onChange(offset + limit)}
      >
        Next →
      </button>
    </nav>
  );
}

export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <button
      type="button"
      class="button button-small"
      onClick={() => {
        navigator.clipboard?.writeText(text).then(
          () => setCopied(true),
          () => setCopied(false),
        );
      }}
    >
      {copied ? 'Copied' : label}
    </button>
  );
}

/** A modal confirmation with the dialog element (focus trapped, Escape cancels). */
export function ConfirmDialog({
  title,
  children,
  confirmLabel,
  danger,
  busy,
  onConfirm,
  onCancel,
}: {
  title: string;
  children: ComponentChildren;
  confirmLabel: string;
  danger?: boolean;
  busy?: boolean;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const dialog = ref.current;
    if (dialog && !dialog.open) dialog.showModal();
  }, []);
  return (
    <dialog
      ref={ref}
      class="dialog"
      aria-labelledby="dialog-title"
      onCancel={(event) => {
        event.preventDefault();
        onCancel();
      }}
    >
      <h2 id="dialog-title">{title}</h2>
      <div class="dialog-body">{children}</div>
      <div class="actions">
        <button type="button" class="button" onClick={onCancel}>
          Cancel
        </button>
        <button
          type="button"
          class={danger ? 'button button-danger' : 'button button-primary'}
          disabled={busy}
          onClick={onConfirm}
        >
          {confirmLabel}
        </button>
      </div>
    </dialog>
  );
}

/** A table of names and their values; `empty` is said instead of an empty table. */
export function KeyValueTable({
  rows,
  empty,
  nested,
  nameClass,
}: {
  rows: readonly (readonly [string, ComponentChildren])[];
  empty?: string;
  nested?: boolean;
  nameClass?: string;
}) {
  if (rows.length === 0 && empty !== undefined) return <p class="muted">{empty}</p>;
  return (
    <table class={nested ? 'kv nested' : 'kv'}>
      <tbody>
        {rows.map(([name, value]) => (
          <tr key={name}>
            <th scope="row" class={nameClass}>
              {name}
            </th>
            <td>{value}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function HeadersTable({ headers }: { headers: Record<string, string> | null | undefined }) {
  const rows = Object.entries(headers ?? {}).map(
    ([name, value]) => [name, <code>{value}</code>] as const,
  );
  return <KeyValueTable rows={rows} empty="No headers." />;
}

/** One fact of a `dl.facts` card: a term and what it is. */
export function Fact({
  term,
  mono,
  children,
}: {
  term: string;
  mono?: boolean;
  children: ComponentChildren;
}) {
  return (
    <div>
      <dt>{term}</dt>
      <dd class={mono ? 'mono' : undefined}>{children}</dd>
    </div>
  );
}

/** A table's header row: one column heading each. */
export function TableHead({ columns }: { columns: readonly ComponentChildren[] }) {
  return (
    <thead>
      <tr>
        {columns.map((column, index) => (
          <th key={index} scope="col">
            {column}
          </th>
        ))}
      </tr>
    </thead>
  );
}

/** A labelled control of a filter bar or a short form: the label's text above the control. */
/** A field whose text is `value`, reported as it changes through `onValue`. */
export interface ValueFieldProps {
  label: string;
  name: string;
  value: string;
  onValue: (value: string) => void;
}

export function Field({
  label,
  grow,
  children,
}: {
  label: string;
  grow?: boolean;
  children: ComponentChildren;
}) {
  return (
    <label class={grow ? 'field grow' : 'field'}>
      <span class="label">{label}</span>
      {children}
    </label>
  );
}

/** A filter of a list (call log, events): a select whose first option, `any`, filters nothing. */
export function FilterSelect({
  label,
  name,
  value,
  any,
  onChange,
  children,
}: {
  label: string;
  name: string;
  value: string;
  any: string;
  onChange: (value: string) => void;
  children: ComponentChildren;
}) {
  return (
    <Field label={label}>
      <select name={name} value={value} onChange={(e) => onChange(e.currentTarget.value)}>
        <option value="">{any}</option>
        {children}
      </select>
    </Field>
  );
}

/** What FormField gives its control: the id its label names, and the ARIA ties to its messages. */
export interface ControlProps {
  id: string;
  'aria-invalid': true | undefined;
  'aria-describedby': string;
}

/**
 * A field of the webhook form: label, control, hint, and the server's complaints about it, which
 * mark the control invalid and are read out with it.
 */
export function FormField({
  id,
  label,
  problems,
  hint,
  children,
}: {
  id: string;
  label: string;
  problems: readonly FieldProblem[];
  hint?: ComponentChildren;
  children: (control: ControlProps) => ComponentChildren;
}) {
  const control: ControlProps = {
    id,
    'aria-invalid': problems.length > 0 ? true : undefined,
    'aria-describedby': hint ? `${id}-hint ${id}-errors` : `${id}-errors`,
  };
  return (
    <div class="field">
      <label class="label" for={id}>
        {label}
      </label>
      {children(control)}
      {hint && (
        <span class="hint" id={`${id}-hint`}>
          {hint}
        </span>
      )}
      <FieldErrors id={`${id}-errors`} problems={problems} />
    </div>
  );
}

/** A one-line input that hands over its text as typed. */
export function TextInput({
  onValue,
  ...input
}: { onValue: (value: string) => void } & Omit<InputHTMLAttributes<HTMLInputElement>, 'onInput'>) {
  return <input {...input} onInput={(e) => onValue(e.currentTarget.value)} />;
}

/** A FormField whose control is a TextInput. */
export function TextField({
  id,
  label,
  problems,
  hint,
  onValue,
  ...input
}: {
  id: string;
  label: string;
  problems: readonly FieldProblem[];
  hint?: ComponentChildren;
  onValue: (value: string) => void;
} & Omit<InputHTMLAttributes<HTMLInputElement>, 'id' | 'label' | 'onInput'>) {
  return (
    <FormField id={id} label={label} problems={problems} hint={hint}>
      {(control) => <TextInput {...input} {...control} onValue={onValue} />}
    </FormField>
  );
}

/** A checkbox with its label's text after it. */
export function Check({
  name,
  value,
  checked,
  onChange,
  children,
}: {
  name?: string;
  value?: string;
  checked: boolean;
  onChange: (checked: boolean) => void;
  children: ComponentChildren;
}) {
  return (
    <label class="check">
      <input
        type="checkbox"
        name={name}
        value={value}
        checked={checked}
        onChange={(e) => onChange(e.currentTarget.checked)}
      />
      {children}
    </label>
  );
}

/** The options of a select whose values are also their labels. */
export function Options({ values }: { values: readonly string[] }) {
  return (
    <>
      {values.map((value) => (
        <option key={value} value={value}>
          {value}
        </option>
      ))}
    </>
  );
}

/** The values a text input suggests (its `list`). */
export function Suggestions({ id, values }: { id: string; values: readonly string[] }) {
  return (
    <datalist id={id}>
      {values.map((value) => (
        <option key={value} value={value} />
      ))}
    </datalist>
  );
}

/** A request or response body: pretty-printed when it is JSON, with the exact bytes one click away. */
export function BodyView({ body, label }: { body: string | null | undefined; label: string }) {
  const [raw, setRaw] = useState(false);
  if (body === null || body === undefined || body === '') return <p class="muted">Empty body.</p>;
  let pretty: string | undefined;
  try {
    pretty = JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    pretty = undefined;
  }
  return (
    <div class="body-view">
      <div class="body-tools">
        {pretty !== undefined && (
          <button
            type="button"
            class="button button-small"
            aria-pressed={raw}
            onClick={() => setRaw(!raw)}
          >
            {raw ? 'Pretty' : 'Exact bytes'}
          </button>
        )}
        <CopyButton text={body} />
      </div>
      <pre class="code" aria-label={label} tabIndex={0}>
        {raw || pretty === undefined ? body : pretty}
      </pre>
    </div>
  );
}

export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return date.toLocaleString(undefined, {
    year: 'numeric',
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  });
}
