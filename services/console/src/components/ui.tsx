import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
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
};

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

export function HeadersTable({ headers }: { headers: Record<string, string> | null | undefined }) {
  const entries = Object.entries(headers ?? {});
  if (entries.length === 0) return <p class="muted">No headers.</p>;
  return (
    <table class="kv">
      <tbody>
        {entries.map(([name, value]) => (
          <tr key={name}>
            <th scope="row">{name}</th>
            <td>
              <code>{value}</code>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
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
