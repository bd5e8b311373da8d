import { useEffect, useMemo, useState } from 'preact/hooks';
import { navigate, useApp } from '../app-context.js';
import {
  Badge,
  Check,
  ConfirmDialog,
  CopyButton,
  ErrorNote,
  FieldErrors,
  FormField,
  Loading,
  TextField,
} from '../components/ui.js';
import { useResource, useAction } from '../hooks.js';
import { asFailure, type ApiFailure } from '../lib/api.js';
import {
  fieldProblems,
  problemsUnder,
  unclaimedProblems,
  type FieldProblem,
} from '../lib/errors.js';
import { formatRoute } from '../lib/route.js';
import type { ReplayOffer, Webhook } from '../lib/types.js';
import { setWebhookEnabled } from '../lib/webhook-actions.js';
import {
  attributesFromForm,
  emptyForm,
  formFromWebhook,
  normalizeFieldPath,
  type WebhookForm,
} from '../lib/webhook-form.js';
import { ReplayOfferNote } from './bulk-jobs.js';
import { policyProblems } from '../lib/delivery-policy.js';
import { flowProblems } from '../lib/flow-control.js';
import { EventsEditor, HeadersEditor, PolicyFields } from './webhook-fields.js';
import { DestinationFields, EndpointAuthFields } from './webhook-destination.js';
import { FlowFields } from './webhook-flow.js';
import { PreviewPanel } from './webhook-preview.js';

/** Top-level attributes: an edit to one clears the server's complaints about it. */
const FIELD_ROOTS = [
  'name',
  'url',
  'enabled',
  'headers',
  'redact_headers',
  'events',
  'custom_payload',
  'http_basic_user',
  'http_basic_password',
  'nested_items_in_payload',
  'payload_changes',
  'auto_retry',
  'payload_api_version',
  'delivery_policy',
  'delivery_order',
  'coalesce',
  'batch',
  'destination',
  'auth',
  'tls',
];

export function WebhookEditor({ id }: { id: string | null }) {
  const { client } = useApp();
  const existing = useResource(
    (signal) =>
      id
        ? client.get<{ data: Webhook }>(`/webhooks/${encodeURIComponent(id)}`, { signal })
        : Promise.resolve(null),
    [client, id],
  );
  if (existing.error) {
    return (
      <section>
        <p>
          <a href="#/webhooks">← Webhooks</a>
        </p>
        <ErrorNote error={existing.error} onRetry={() => existing.reload()} />
      </section>
    );
  }
  if (existing.loading && !existing.data) return <Loading label="Loading the webhook…" />;
  return (
    <EditorForm webhook={existing.data?.data ?? null} onChanged={() => existing.reload(true)} />
  );
}

function EditorForm({ webhook, onChanged }: { webhook: Webhook | null; onChanged: () => void }) {
  const { client, notify } = useApp();
  const [form, setForm] = useState<WebhookForm>(() =>
    webhook ? formFromWebhook(webhook.attributes) : emptyForm(),
  );
  const [saveProblems, setSaveProblems] = useState<FieldProblem[]>([]);
  const [previewProblems, setPreviewProblems] = useState<FieldProblem[]>([]);
  const [saveError, setSaveError] = useState<ApiFailure | null>(null);
  const [saving, setSaving] = useState(false);
  const [dialog, setDialog] = useState<'delete' | 'rotate' | null>(null);
  const action = useAction();
  const [newSecret, setNewSecret] = useState<string | null>(null);
  const [offer, setOffer] = useState<ReplayOffer | null>(null);

  useEffect(() => {
    if (webhook) setForm((current) => ({ ...current, enabled: webhook.attributes.enabled }));
  }, [webhook?.attributes.enabled]);

  const update = (root: string, patch: Partial<WebhookForm>) => {
    setForm((current) => ({ ...current, ...patch }));
    setSaveProblems((current) =>
      current.filter((problem) => problem.field !== root && !problem.field.startsWith(`${root}.`)),
    );
  };

  // Server complaints from the last save, and the live ones from the preview (which validates
  // url, headers and custom_payload as creation would), each shown once beside its field.
  // The policy's and the batch's ranges, checked as typed.
  const localChecks = useMemo(
    () => [...policyProblems(form.deliveryPolicy), ...flowProblems(form.flow)],
    [form.deliveryPolicy, form.flow],
  );
  const problems = useMemo(() => {
    const seen = new Set<string>();
    return [...saveProblems, ...previewProblems, ...localChecks].filter((problem) => {
      const key = `${problem.field}\u0000${problem.message}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
  }, [saveProblems, previewProblems, localChecks]);
  const at = (field: string, exact = false) => problemsUnder(problems, field, { exact });

  const focusFirstProblem = () =>
    requestAnimationFrame(() => {
      const first = document.querySelector<HTMLElement>('[aria-invalid="true"]');
      first?.focus();
    });

  const save = async (event: Event) => {
    event.preventDefault();
    // The policy's and the batch's ranges are checked here first (the server checks them again).
    if (localChecks.length > 0) {
      focusFirstProblem();
      return;
    }
    setSaving(true);
    setSaveError(null);
    setSaveProblems([]);
    const attributes = attributesFromForm(form);
    try {
      if (webhook) {
        await client.put(`/webhooks/${webhook.id}`, {
          data: { type: 'webhook', id: webhook.id, attributes },
        });
        notify('Webhook saved');
        onChanged();
      } else {
        const created = await client.post<{ data: Webhook }>('/webhooks', {
          data: { type: 'webhook', attributes },
        });
        notify(`Webhook ${created.data.attributes.name} created`);
        navigate(`#/webhooks/${created.data.id}`);
      }
    } catch (error) {
      const failure = asFailure(error);
      const fields = fieldProblems(failure.entries).map((problem) => ({
        ...problem,
        field: normalizeFieldPath(problem.field),
      }));
      setSaveProblems(fields);
      if (fields.length === 0 || unclaimedProblems(fields, FIELD_ROOTS).length > 0) {
        setSaveError(failure);
      } else {
        setSaveError(null);
      }
      // Take the eye (and the keyboard) to the first field in trouble.
      focusFirstProblem();
    } finally {
      setSaving(false);
    }
  };

  const act = async (run: () => Promise<void>) => {
    await action.run(run);
    setDialog(null);
  };

  const unclaimed = unclaimedProblems(saveProblems, FIELD_ROOTS);
  const title = webhook ? webhook.attributes.name : 'New webhook';

  return (
    <section aria-labelledby="editor-title">
      <p class="crumbs">
        <a href="#/webhooks">← Webhooks</a>
        {webhook && (
          <>
            {' · '}
            <a href={`#/webhooks/${webhook.id}`}>Health, tests and replays</a>
          </>
        )}
      </p>
      <div class="page-head">
        <h1 id="editor-title">{title}</h1>
        {webhook && (
          <div class="actions">
            <Badge status={webhook.attributes.enabled ? 'enabled' : 'disabled'} />
            <a class="button" href={formatRoute(['calls'], { webhook: webhook.id })}>
              Calls
            </a>
            <button
              type="button"
              class="button"
              disabled={action.busy}
              onClick={() =>
                void act(async () => {
                  const { offer: next } = await setWebhookEnabled(
                    client,
                    webhook,
                    !webhook.attributes.enabled,
                  );
                  setOffer(next);
                  notify(webhook.attributes.enabled ? 'Webhook disabled' : 'Webhook enabled');
                  onChanged();
                })
              }
            >
              {webhook.attributes.enabled ? 'Disable' : 'Enable'}
            </button>
            <button type="button" class="button" onClick={() => setDialog('rotate')}>
              Rotate secret
            </button>
            <button type="button" class="button button-danger" onClick={() => setDialog('delete')}>
              Delete
            </button>
          </div>
        )}
      </div>
      {webhook && !webhook.attributes.enabled && webhook.attributes.disabled_reason && (
        <div class="note note-warning">Disabled: {webhook.attributes.disabled_reason}</div>
      )}
      {action.error && <ErrorNote error={action.error} />}
      {offer && <ReplayOfferNote offer={offer} onDismiss={() => setOffer(null)} />}
      {newSecret && (
        <div class="note note-success secret-once" role="status">
          <p>
            <strong>New signing secret.</strong> It is shown this once: copy it to your receiver
            now. The previous secret keeps signing beside it for 24 hours.
          </p>
          <p class="secret-row">
            <code class="secret" data-testid="new-secret">
              {newSecret}
            </code>{' '}
            <CopyButton text={newSecret} />
            <button type="button" class="button button-small" onClick={() => setNewSecret(null)}>
              Done
            </button>
          </p>
        </div>
      )}

      <div class="editor-grid">
        <form class="card form" onSubmit={save} noValidate aria-label="Webhook settings">
          <TextField
            id="wh-name"
            label="Name"
            problems={at('name')}
            name="name"
            value={form.name}
            onValue={(name) => update('name', { name })}
          />
          <TextField
            id="wh-url"
            label="URL"
            problems={at('url')}
            hint={
              form.destination.kind === 'http' ? (
                <>
                  Mustache tags are allowed in the path and query, e.g.{' '}
                  <code>/hooks/{'{{entity_type}}'}</code>.
                </>
              ) : (
                'Kept, but not used: the calls go to the broker below.'
              )
            }
            name="url"
            type="url"
            class="mono"
            value={form.url}
            onValue={(url) => update('url', { url })}
          />
          <DestinationFields
            destination={form.destination}
            problems={problems}
            onChange={(destination) => update('destination', { destination })}
          />

          <EventsEditor
            rows={form.events}
            problems={problems}
            onChange={(events) => update('events', { events })}
          />
          <HeadersEditor
            rows={form.headers}
            redacted={form.redactHeaders}
            problems={problems}
            onChange={(headers) => update('headers', { headers })}
            onRedactedChange={(redactHeaders) => update('redact_headers', { redactHeaders })}
          />

          <fieldset class="group">
            <legend>Payload</legend>
            <Check
              name="use_custom_payload"
              checked={form.useCustomPayload}
              onChange={(useCustomPayload) => update('custom_payload', { useCustomPayload })}
            >
              Send a custom payload (a Mustache template) instead of the default JSON
            </Check>
            {form.useCustomPayload && (
              <FormField
                id="wh-custom-payload"
                label="Template"
                problems={at('custom_payload')}
                hint={
                  <>
                    <code>{'{{x}}'}</code> escapes for a JSON string, <code>{'{{{x}}}'}</code> is
                    raw. The view is the default payload: <code>entity</code>,{' '}
                    <code>event_type</code>, <code>environment</code>, <code>webhook_call_id</code>…
                    and <code>changed_fields</code>, the api_keys of the fields that changed.
                  </>
                }
              >
                {(control) => (
                  <textarea
                    {...control}
                    name="custom_payload"
                    class="mono"
                    rows={10}
                    spellcheck={false}
                    value={form.customPayload}
                    onInput={(e) =>
                      update('custom_payload', { customPayload: e.currentTarget.value })
                    }
                  />
                )}
              </FormField>
            )}
            <Check
              name="nested_items_in_payload"
              checked={form.nestedItemsInPayload}
              onChange={(nestedItemsInPayload) =>
                update('nested_items_in_payload', { nestedItemsInPayload })
              }
            >
              Expand blocks in the payload's entity
            </Check>
            <Check
              name="payload_changes"
              checked={form.payloadChanges}
              onChange={(payloadChanges) => update('payload_changes', { payloadChanges })}
            >
              <span>
                Add <code>changes</code>: a JSON Patch (RFC 6902) from the previous version's
                attributes to the new ones
              </span>
            </Check>
            <FieldErrors problems={[...at('nested_items_in_payload'), ...at('payload_changes')]} />
          </fieldset>

          <fieldset class="group">
            <legend>Authentication</legend>
            <div class="row-2">
              <TextField
                id="wh-basic-user"
                label="HTTP Basic user"
                problems={at('http_basic_user')}
                name="http_basic_user"
                autoComplete="off"
                value={form.httpBasicUser}
                onValue={(httpBasicUser) => update('http_basic_user', { httpBasicUser })}
              />
              <TextField
                id="wh-basic-password"
                label="HTTP Basic password"
                problems={at('http_basic_password')}
                name="http_basic_password"
                type="password"
                autoComplete="new-password"
                value={form.httpBasicPassword}
                onValue={(httpBasicPassword) =>
                  update('http_basic_password', { httpBasicPassword })
                }
              />
            </div>
            <EndpointAuthFields
              auth={form.auth}
              tls={form.tls}
              broker={form.destination.kind !== 'http'}
              problems={problems}
              onAuth={(auth) => update('auth', { auth })}
              onTls={(tls) => update('tls', { tls })}
            />
            {webhook?.attributes.signing_secret && (
              <p class="small muted">
                Signing secret: <code>{maskSecret(webhook.attributes.signing_secret)}</code> (rotate
                it to get a new one).
              </p>
            )}
          </fieldset>

          <fieldset class="group">
            <legend>Delivery</legend>
            <Check
              name="enabled"
              checked={form.enabled}
              onChange={(enabled) => update('enabled', { enabled })}
            >
              Enabled
            </Check>
            <Check
              name="auto_retry"
              checked={form.autoRetry}
              onChange={(autoRetry) => update('auto_retry', { autoRetry })}
            >
              Retry failed calls automatically (7 times, from 2 minutes to 2 days apart)
            </Check>
            <FieldErrors problems={[...at('enabled'), ...at('auto_retry')]} />
          </fieldset>

          <PolicyFields
            policy={form.deliveryPolicy}
            problems={problems}
            onChange={(deliveryPolicy) => update('delivery_policy', { deliveryPolicy })}
          />
          <FlowFields
            flow={form.flow}
            problems={problems}
            onChange={(flow, root) => update(root, { flow })}
          />

          {unclaimed.length > 0 && <FieldErrors problems={unclaimed} />}
          {saveError && <ErrorNote error={saveError} />}
          <div class="actions sticky-actions">
            <button type="submit" class="button button-primary" disabled={saving}>
              {saving ? 'Saving…' : webhook ? 'Save changes' : 'Create webhook'}
            </button>
            <a class="button button-quiet" href="#/webhooks">
              Cancel
            </a>
          </div>
        </form>
        <PreviewPanel form={form} webhookId={webhook?.id} onProblems={setPreviewProblems} />
      </div>

      {dialog === 'delete' && webhook && (
        <ConfirmDialog
          title={`Delete ${webhook.attributes.name}?`}
          confirmLabel="Delete webhook"
          danger
          busy={action.busy}
          onCancel={() => setDialog(null)}
          onConfirm={() =>
            void act(async () => {
              await client.delete(`/webhooks/${webhook.id}`);
              notify(`Webhook ${webhook.attributes.name} deleted`);
              navigate('#/webhooks');
            })
          }
        >
          <p>
            Herald stops sending it events at once and drops its pending retries. Its past calls
            stay in the log. This cannot be undone.
          </p>
        </ConfirmDialog>
      )}
      {dialog === 'rotate' && webhook && (
        <ConfirmDialog
          title="Rotate the signing secret?"
          confirmLabel="Rotate secret"
          busy={action.busy}
          onCancel={() => setDialog(null)}
          onConfirm={() =>
            void act(async () => {
              const rotated = await client.post<{ data: Webhook }>(
                `/webhooks/${webhook.id}/rotate_secret`,
              );
              setNewSecret(rotated.data.attributes.signing_secret ?? '');
              onChanged();
            })
          }
        >
          <p>
            Herald makes a new secret and shows it once. For 24 hours, calls carry both signatures,
            so your receiver can switch without missing any.
          </p>
        </ConfirmDialog>
      )}
    </section>
  );
}

function maskSecret(secret: string): string {
  return secret.length <= 10 ? '••••••' : `${secret.slice(0, 6)}••••••${secret.slice(-4)}`;
}
