import { useState } from 'preact/hooks';
import { useApp } from '../app-context.js';
import { ApiClient, ApiFailure } from '../lib/api.js';
import { recentEnvironments } from '../lib/session.js';
import { Suggestions, TextInput } from '../components/ui.js';

/**
 * Switches X-Environment. The API has no list of environments, so the name is typed (recently
 * used ones are offered) and checked against Herald before the switch.
 */
export function EnvironmentSwitcher({
  current,
  onSwitch,
}: {
  current: string;
  onSwitch: (environment: string) => void;
}) {
  const { session } = useApp();
  const [value, setValue] = useState(current);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (event: Event) => {
    event.preventDefault();
    const environment = value.trim();
    if (!environment || environment === current) return;
    setBusy(true);
    setError(null);
    try {
      const probe = new ApiClient({ token: session.token, environment });
      // Any endpoint validates X-Environment; pick one the token's role may call.
      if (session.access === 'admin') await probe.get('/webhooks');
      else await probe.get('/items', { query: { page: { limit: '1' } } });
      onSwitch(environment);
    } catch (failure) {
      setError(
        failure instanceof ApiFailure && failure.code === 'INVALID_ENVIRONMENT'
          ? `No environment "${environment}"`
          : failure instanceof Error
            ? failure.message
            : 'Could not switch',
      );
    } finally {
      setBusy(false);
    }
  };

  return (
    <form class="env-switcher" onSubmit={submit}>
      <label>
        <span class="label-inline">Environment</span>
        <TextInput
          type="text"
          list="recent-environments"
          name="environment"
          size={10}
          value={value}
          aria-invalid={error ? true : undefined}
          aria-describedby={error ? 'env-error' : undefined}
          onValue={setValue}
        />
      </label>
      <Suggestions id="recent-environments" values={recentEnvironments()} />
      <button
        type="submit"
        class="button button-small"
        disabled={busy || value.trim() === current || !value.trim()}
      >
        Switch
      </button>
      {error && (
        <span class="env-error" id="env-error" role="alert">
          {error}
        </span>
      )}
    </form>
  );
}
