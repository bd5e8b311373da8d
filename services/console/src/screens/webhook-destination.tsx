import { DESTINATION_KINDS, DESTINATION_SCHEMES, STREAM_MAX_LEN } from '@herald/contract/tables';
import type { ComponentChildren } from 'preact';
import { Check, FieldErrors, FormField, TextField } from '../components/ui.js';
import {
  DESTINATION_LABELS,
  isDestinationKind,
  type AuthForm,
  type DestinationForm,
  type TlsForm,
} from '../lib/destination.js';
import { problemsUnder, type FieldProblem } from '../lib/errors.js';

/**
 * The editor's "Destination" group (docs/api.md, Destinations): HTTP to the webhook's URL, or a
 * broker with where on it the message goes. The password is write-only: the form says whether one
 * is stored, and an empty input keeps it.
 */
export function DestinationFields({
  destination,
  problems,
  onChange,
}: {
  destination: DestinationForm;
  problems: readonly FieldProblem[];
  onChange: (destination: DestinationForm) => void;
}) {
  const at = (key: string) => problemsUnder(problems, `destination.${key}`);
  const set = (patch: Partial<DestinationForm>) => onChange({ ...destination, ...patch });
  const { kind } = destination;
  const text = textFields('destination', destination, problems, onChange);
  const mono = { class: 'mono' };
  return (
    <fieldset class="group">
      <legend>Destination</legend>
      <FormField
        id="wh-destination-kind"
        label="Send calls to"
        problems={problemsUnder(problems, 'destination', { exact: true }).concat(at('kind'))}
        hint="A broker gets each call as a message: the same body, and the same headers (the signature among them) as message headers."
      >
        {(control) => (
          <select
            {...control}
            name="destination.kind"
            value={kind}
            onChange={(e) => {
              const next = e.currentTarget.value;
              if (isDestinationKind(next)) set({ kind: next });
            }}
          >
            {DESTINATION_KINDS.map((value) => (
              <option key={value} value={value}>
                {DESTINATION_LABELS[value]}
              </option>
            ))}
          </select>
        )}
      </FormField>
      {kind !== 'http' && (
        <>
          {text('url', 'url', 'Broker URL', {
            ...mono,
            autoComplete: 'off',
            hint: `${DESTINATION_SCHEMES[kind].map((scheme) => `${scheme}://`).join(' or ')}; a password in it is shown as *** and kept while *** stays.`,
          })}
          <div class="row-2">
            {text('username', 'username', 'Broker user', {
              autoComplete: 'off',
              hint: "Empty: none, or the URL's.",
            })}
            <SecretField
              id="wh-destination-password"
              label="Broker password"
              problems={at('password')}
              stored={destination.passwordSet}
              value={destination.password}
              onValue={(password) => set({ password })}
              onRemove={() => set({ passwordSet: false, password: '' })}
            />
          </div>
          {kind === 'rabbitmq' && (
            <div class="row-2">
              {text('exchange', 'exchange', 'Exchange', mono)}
              {text('routingKey', 'routing_key', 'Routing key', {
                ...mono,
                hint: 'May be empty (a fanout exchange ignores it).',
              })}
            </div>
          )}
          {kind === 'nats' && (
            <>
              {text('subject', 'subject', 'Subject', { ...mono, hint: 'No wildcards (* or >).' })}
              <Check
                name="destination.jetstream"
                checked={destination.jetstream}
                onChange={(jetstream) => set({ jetstream })}
              >
                JetStream: acknowledged once a stream stored it (off: core NATS, no acknowledgement)
              </Check>
              <FieldErrors problems={at('jetstream')} />
            </>
          )}
          {kind === 'mqtt' &&
            text('topic', 'topic', 'Topic', { ...mono, hint: 'No wildcards (+ or #).' })}
          {kind === 'redis_stream' && (
            <div class="row-2">
              {text('stream', 'stream', 'Stream', mono)}
              {text('maxLen', 'max_len', 'Most entries kept (MAXLEN ~)', {
                inputMode: 'numeric',
                placeholder: String(STREAM_MAX_LEN.default),
                hint: `${STREAM_MAX_LEN.min} to ${STREAM_MAX_LEN.max.toLocaleString('en')}. Empty: ${STREAM_MAX_LEN.default.toLocaleString('en')}.`,
              })}
            </div>
          )}
        </>
      )}
    </fieldset>
  );
}

/**
 * OAuth2 client credentials and mutual TLS towards an HTTP endpoint (docs/api.md, Endpoint
 * authentication), inside the editor's "Authentication" group. The client secret and the key are
 * write-only: the form says whether one is stored, and an empty input keeps it.
 */
export function EndpointAuthFields({
  auth,
  tls,
  broker,
  problems,
  onAuth,
  onTls,
}: {
  auth: AuthForm;
  tls: TlsForm;
  /** The destination is a broker: these apply to HTTP only. */
  broker: boolean;
  problems: readonly FieldProblem[];
  onAuth: (auth: AuthForm) => void;
  onTls: (tls: TlsForm) => void;
}) {
  const authAt = (key: string) => problemsUnder(problems, `auth.${key}`);
  const tlsAt = (key: string) => problemsUnder(problems, `tls.${key}`);
  const setAuth = (patch: Partial<AuthForm>) => onAuth({ ...auth, ...patch });
  const setTls = (patch: Partial<TlsForm>) => onTls({ ...tls, ...patch });
  const text = textFields('auth', auth, problems, onAuth);
  const optional = { hint: 'Empty: none sent.' };
  return (
    <>
      {broker && (auth.enabled || tls.enabled) && (
        <p class="note note-warning small">
          OAuth2 and mutual TLS apply to HTTP endpoints; a broker destination does not use them.
        </p>
      )}
      <Check name="auth" checked={auth.enabled} onChange={(enabled) => setAuth({ enabled })}>
        <span>
          OAuth2 client credentials: fetch a token and send it as <code>Authorization: Bearer</code>
        </span>
      </Check>
      <FieldErrors
        problems={problemsUnder(problems, 'auth', { exact: true }).concat(authAt('kind'))}
      />
      {auth.enabled && (
        <div class="subcard">
          {text('tokenUrl', 'token_url', 'Token URL', { type: 'url', class: 'mono' })}
          <div class="row-2">
            {text('clientId', 'client_id', 'Client id', { autoComplete: 'off' })}
            <SecretField
              id="wh-auth-client-secret"
              label="Client secret"
              problems={authAt('client_secret')}
              stored={auth.secretSet}
              keeps="while the token URL and client id stay the same"
              value={auth.clientSecret}
              onValue={(clientSecret) => setAuth({ clientSecret })}
            />
          </div>
          <FormField
            id="wh-auth-client-auth"
            label="Client authentication"
            problems={authAt('client_auth')}
          >
            {(control) => (
              <select
                {...control}
                name="auth.client_auth"
                value={auth.clientAuth}
                onChange={(e) =>
                  setAuth({ clientAuth: e.currentTarget.value === 'body' ? 'body' : 'basic' })
                }
              >
                <option value="basic">HTTP Basic (basic)</option>
                <option value="body">In the form body (body)</option>
              </select>
            )}
          </FormField>
          <div class="row-2">
            {text('scope', 'scope', 'Scope', optional)}
            {text('audience', 'audience', 'Audience', optional)}
          </div>
        </div>
      )}
      <Check name="tls" checked={tls.enabled} onChange={(enabled) => setTls({ enabled })}>
        Mutual TLS: present a client certificate, or trust a private CA
      </Check>
      <FieldErrors problems={problemsUnder(problems, 'tls', { exact: true })} />
      {tls.enabled && (
        <div class="subcard">
          <PemField
            id="wh-tls-client-certificate"
            label="Client certificate (PEM)"
            problems={tlsAt('client_certificate')}
            value={tls.clientCertificate}
            onValue={(clientCertificate) => setTls({ clientCertificate })}
          />
          <PemField
            id="wh-tls-client-key"
            label="Client key (PEM)"
            problems={tlsAt('client_key')}
            value={tls.clientKey}
            onValue={(clientKey) => setTls({ clientKey })}
            hint={
              <StoredState
                id="wh-tls-client-key"
                stored={tls.keySet}
                typed={tls.clientKey.trim() !== ''}
                keeps="while the certificate stays the same"
              />
            }
          />
          <PemField
            id="wh-tls-ca-certificate"
            label="CA certificates (PEM)"
            problems={tlsAt('ca_certificate')}
            hint="The CAs that sign the endpoint's certificate, in place of the system's. Empty: the system's."
            value={tls.caCertificate}
            onValue={(caCertificate) => setTls({ caCertificate })}
          />
        </div>
      )}
    </>
  );
}

type StringKeys<F> = { [K in keyof F]: F[K] extends string ? K : never }[keyof F];
type TextExtras = Omit<
  Parameters<typeof TextField>[0],
  'id' | 'label' | 'problems' | 'name' | 'value' | 'onValue'
>;

/**
 * Text inputs bound to a form's string keys, each named by its attribute path under `root`
 * (`destination.routing_key`: id `wh-destination-routing-key`), with the problems at that path.
 */
function textFields<F>(
  root: string,
  form: F,
  problems: readonly FieldProblem[],
  onChange: (form: F) => void,
) {
  return (key: StringKeys<F>, wire: string, label: string, extra: TextExtras = {}) => (
    <TextField
      id={`wh-${root}-${wire.replaceAll('_', '-')}`}
      label={label}
      problems={problemsUnder(problems, `${root}.${wire}`)}
      name={`${root}.${wire}`}
      value={form[key] as string}
      onValue={(value) => onChange({ ...form, [key]: value })}
      {...extra}
    />
  );
}

/** Whether a write-only secret is stored, and what the input does with it. */
function StoredState({
  id,
  stored,
  typed,
  keeps,
}: {
  id: string;
  stored: boolean;
  typed: boolean;
  keeps?: string;
}) {
  const state = typed ? (stored ? 'Replaced on save' : 'Set on save') : stored ? 'Set' : 'Not set';
  return (
    <span data-testid={`${id}-state`}>
      <strong>{state}</strong>
      {stored && !typed && `: never shown; leave empty to keep it${keeps ? ` ${keeps}` : ''}`}.
    </span>
  );
}

/** A write-only secret: an empty password input, with whether one is stored. */
function SecretField({
  id,
  label,
  problems,
  stored,
  keeps,
  value,
  onValue,
  onRemove,
}: {
  id: string;
  label: string;
  problems: readonly FieldProblem[];
  stored: boolean;
  keeps?: string;
  value: string;
  onValue: (value: string) => void;
  onRemove?: () => void;
}) {
  return (
    <TextField
      id={id}
      label={label}
      problems={problems}
      hint={
        <>
          <StoredState
            id={id}
            stored={stored}
            typed={value !== ''}
            {...(keeps !== undefined && { keeps })}
          />
          {stored && onRemove && (
            <>
              {' '}
              <button type="button" class="button button-small button-quiet" onClick={onRemove}>
                Remove
              </button>
            </>
          )}
        </>
      }
      name={id}
      type="password"
      autoComplete="new-password"
      placeholder={stored ? '•••••• (set)' : ''}
      value={value}
      onValue={onValue}
    />
  );
}

function PemField({
  id,
  label,
  problems,
  hint,
  value,
  onValue,
}: {
  id: string;
  label: string;
  problems: readonly FieldProblem[];
  hint?: ComponentChildren;
  value: string;
  onValue: (value: string) => void;
}) {
  return (
    <FormField id={id} label={label} problems={problems} hint={hint}>
      {(control) => (
        <textarea
          {...control}
          class="mono"
          rows={4}
          spellcheck={false}
          placeholder="-----BEGIN …-----"
          value={value}
          onInput={(e) => onValue(e.currentTarget.value)}
        />
      )}
    </FormField>
  );
}
