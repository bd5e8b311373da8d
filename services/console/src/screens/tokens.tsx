import { useState } from 'preact/hooks';
import { useApp } from '../app-context.js';
import {
  Badge,
  ConfirmDialog,
  CopyButton,
  Empty,
  ErrorNote,
  Field,
  FieldErrors,
  LoadState,
  TableHead,
  TextField,
  formatTime,
  Screen,
} from '../components/ui.js';
import { useResource } from '../hooks.js';
import { asFailure, type ApiFailure, type Collection } from '../lib/api.js';
import { fieldProblems, problemsUnder } from '../lib/errors.js';
import { accessTokenBody } from '../lib/tokens.js';
import type { AccessToken, RoleResource } from '../lib/types.js';

/** A token's value, just made: shown until the user says it is copied, never again. */
interface ShownValue {
  heading: string;
  value: string;
}

/**
 * #/tokens — the API tokens (docs/api.md, Access tokens): every active one, the bootstrap admin
 * token included; create one (its value shown once), give one a new value, or revoke it.
 */
export function Tokens() {
  const { client, notify } = useApp();
  const tokens = useResource(
    (signal) => client.get<Collection<AccessToken>>('/access_tokens', { signal }),
    [client],
  );
  const roles = useResource(
    (signal) => client.get<Collection<RoleResource>>('/roles', { signal }),
    [client],
  );
  const [name, setName] = useState('');
  const [role, setRole] = useState('producer');
  const [creating, setCreating] = useState(false);
  const [createError, setCreateError] = useState<ApiFailure | null>(null);
  const [shown, setShown] = useState<ShownValue | null>(null);
  const [dialog, setDialog] = useState<{
    action: 'revoke' | 'regenerate';
    token: AccessToken;
  } | null>(null);
  const [busy, setBusy] = useState(false);
  const [actionError, setActionError] = useState<ApiFailure | null>(null);

  const problems = createError ? fieldProblems(createError.entries) : [];
  const create = async (event: Event) => {
    event.preventDefault();
    setCreating(true);
    setCreateError(null);
    setShown(null);
    try {
      const created = await client.post<{ data: AccessToken }>(
        '/access_tokens',
        accessTokenBody(name, role),
      );
      const { name: made, token } = created.data.attributes;
      setShown({ heading: `Token “${made}” created.`, value: token ?? '' });
      setName('');
      tokens.reload(true);
    } catch (error) {
      setCreateError(asFailure(error));
    } finally {
      setCreating(false);
    }
  };

  const act = async () => {
    if (!dialog) return;
    const { action, token } = dialog;
    setBusy(true);
    setActionError(null);
    try {
      if (action === 'revoke') {
        await client.delete(`/access_tokens/${encodeURIComponent(token.id)}`);
        notify(`Token ${token.attributes.name} revoked`);
      } else {
        const regenerated = await client.post<{ data: AccessToken }>(
          `/access_tokens/${encodeURIComponent(token.id)}/regenerate_token`,
        );
        setShown({
          heading: `New value of “${token.attributes.name}”; the previous one no longer works.`,
          value: regenerated.data.attributes.token ?? '',
        });
      }
      tokens.reload(true);
    } catch (error) {
      setActionError(asFailure(error));
    } finally {
      setBusy(false);
      setDialog(null);
    }
  };

  const list = tokens.data?.data ?? [];
  const roleList = roles.data?.data ?? [];
  return (
    <Screen id="tokens" title="API tokens">
      {shown && (
        <div class="note note-success secret-once" role="status">
          <p>
            <strong>{shown.heading}</strong> Copy it now: Herald keeps only a hash of it and shows
            it this once.
          </p>
          <p class="secret-row">
            <code class="secret" data-testid="new-token">
              {shown.value}
            </code>{' '}
            <CopyButton text={shown.value} />
            <button type="button" class="button button-small" onClick={() => setShown(null)}>
              Done
            </button>
          </p>
        </div>
      )}

      <form class="card form" aria-label="New token" onSubmit={create} noValidate>
        <TextField
          id="token-name"
          label="Name"
          problems={problemsUnder(problems, 'name')}
          value={name}
          onValue={setName}
          placeholder="e.g. CMS publisher"
          autoComplete="off"
        />
        <Field label="Role">
          <select name="role" value={role} onChange={(e) => setRole(e.currentTarget.value)}>
            {roleList.map((r) => (
              <option key={r.id} value={r.id}>
                {r.attributes.name} — {r.attributes.description}
              </option>
            ))}
          </select>
          <FieldErrors problems={problemsUnder(problems, 'role')} />
        </Field>
        <div class="actions">
          <button
            type="submit"
            class="button button-primary"
            disabled={creating || !name.trim() || roleList.length === 0}
          >
            {creating ? 'Creating…' : 'Create token'}
          </button>
        </div>
      </form>
      {createError && problems.length === 0 && <ErrorNote error={createError} />}
      {roles.error && <ErrorNote error={roles.error} onRetry={() => roles.reload()} />}
      {actionError && <ErrorNote error={actionError} />}

      <LoadState resource={tokens} label="Loading tokens…" />
      {tokens.data && list.length === 0 && (
        <Empty>
          <p>No active tokens.</p>
        </Empty>
      )}
      {list.length > 0 && (
        <table class="table table-cards" aria-label="Active tokens">
          <TableHead
            columns={[
              'Name',
              'Role',
              'Token',
              'Last used',
              'Created',
              <span class="visually-hidden">Actions</span>,
            ]}
          />
          <tbody>
            {list.map((token) => {
              const bootstrap = token.attributes.hardcoded_type === 'bootstrap';
              return (
                <tr key={token.id} data-token-id={token.id}>
                  <td data-label="Name">
                    <span class="strong">{token.attributes.name}</span>{' '}
                    {bootstrap && (
                      <Badge
                        status="bootstrap"
                        title="From HERALD_ADMIN_TOKEN or the admin-token file: its value is configuration"
                      />
                    )}
                  </td>
                  <td data-label="Role">{token.relationships.role.data.id}</td>
                  <td data-label="Token" class="mono">
                    {token.attributes.token_hint}
                  </td>
                  <td data-label="Last used">
                    {token.attributes.last_used_at
                      ? formatTime(token.attributes.last_used_at)
                      : 'Never'}
                  </td>
                  <td data-label="Created">{formatTime(token.attributes.created_at)}</td>
                  <td>
                    <div class="row-actions">
                      {!bootstrap && (
                        <button
                          type="button"
                          class="button button-small"
                          onClick={() => setDialog({ action: 'regenerate', token })}
                        >
                          Regenerate
                        </button>
                      )}
                      <button
                        type="button"
                        class="button button-small button-danger"
                        onClick={() => setDialog({ action: 'revoke', token })}
                      >
                        Revoke
                      </button>
                    </div>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}

      {dialog?.action === 'revoke' && (
        <ConfirmDialog
          title={`Revoke ${dialog.token.attributes.name}?`}
          confirmLabel="Revoke token"
          danger
          busy={busy}
          onCancel={() => setDialog(null)}
          onConfirm={() => void act()}
        >
          <p>
            Herald refuses this token from now on (other Herald processes within a few seconds).
            This cannot be undone.
          </p>
        </ConfirmDialog>
      )}
      {dialog?.action === 'regenerate' && (
        <ConfirmDialog
          title={`Give ${dialog.token.attributes.name} a new value?`}
          confirmLabel="Regenerate"
          busy={busy}
          onCancel={() => setDialog(null)}
          onConfirm={() => void act()}
        >
          <p>
            Its current value stops working now; the new one is shown once. Its name and role stay.
          </p>
        </ConfirmDialog>
      )}
    </Screen>
  );
}
