import { useState } from 'preact/hooks';
import { ApiClient, ApiFailure, asFailure } from '../lib/api.js';
import type { Access, Session } from '../lib/session.js';
import { Field, TextInput } from '../components/ui.js';

/** Finds out what the token may do: admin (everything) or read_only (records). */
async function checkAccess(client: ApiClient): Promise<Access> {
  try {
    await client.get('/webhooks');
    return 'admin';
  } catch (error) {
    if (!(error instanceof ApiFailure) || error.code !== 'INSUFFICIENT_PERMISSIONS') throw error;
  }
  try {
    await client.get('/items', { query: { page: { limit: '1' } } });
    return 'read_only';
  } catch (error) {
    if (error instanceof ApiFailure && error.code === 'INSUFFICIENT_PERMISSIONS') {
      throw new ApiFailure(
        403,
        [
          {
            code: 'INSUFFICIENT_PERMISSIONS',
            details: {
              message:
                'This token may only send events (producer role). The console needs an admin or read_only token.',
            },
          },
        ],
        error.requestId,
      );
    }
    throw error;
  }
}

export function SignIn({
  notice,
  onSignedIn,
}: {
  notice: string | null;
  onSignedIn: (session: Session) => void;
}) {
  const [token, setToken] = useState('');
  const [environment, setEnvironment] = useState('main');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiFailure | null>(null);

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    const credentials = { token: token.trim(), environment: environment.trim() || 'main' };
    try {
      const access = await checkAccess(new ApiClient(credentials));
      onSignedIn({ ...credentials, access });
    } catch (failure) {
      setError(asFailure(failure));
      setBusy(false);
    }
  };

  const envError = error?.code === 'INVALID_ENVIRONMENT';
  const forbidden = error?.entries[0]?.details.message;
  return (
    <main class="signin" id="main">
      <form class="card signin-card" onSubmit={submit} aria-labelledby="signin-title">
        <h1 id="signin-title">
          <span class="brand-mark" aria-hidden="true">
            ◆
          </span>{' '}
          Herald console
        </h1>
        <p class="muted">
          Sign in with an API token. It stays in this browser tab only (session storage) and is sent
          to Herald as a Bearer header.
        </p>
        {notice && (
          <div class="note note-warning" role="alert">
            {notice}
          </div>
        )}
        <Field label="API token">
          <TextInput
            type="password"
            name="token"
            autoComplete="off"
            required
            autoFocus
            value={token}
            onValue={setToken}
            aria-invalid={error && !envError ? true : undefined}
          />
        </Field>
        <Field label="Environment">
          <TextInput
            type="text"
            name="environment"
            value={environment}
            onValue={setEnvironment}
            aria-invalid={envError ? true : undefined}
          />
          <span class="hint">Sent as X-Environment; main is the primary one.</span>
        </Field>
        {error && (
          <div class="note note-error" role="alert">
            {error.code === 'INSUFFICIENT_PERMISSIONS' && forbidden ? forbidden : error.message}
          </div>
        )}
        <button type="submit" class="button button-primary" disabled={busy || !token.trim()}>
          {busy ? 'Checking…' : 'Sign in'}
        </button>
        <p class="hint">
          The standalone server prints where its admin token is. More tokens: the Tokens screen,
          once signed in with an admin token, or{' '}
          <code>pnpm herald tokens create --name me --role read_only</code> (Herald may be running).
        </p>
      </form>
    </main>
  );
}
