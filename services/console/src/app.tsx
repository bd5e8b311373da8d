import { useCallback, useEffect, useMemo, useState } from 'preact/hooks';
import { AppContext } from './app-context.js';
import { ApiClient, type ApiFailure } from './lib/api.js';
import { parseRoute, type Route } from './lib/route.js';
import { clearSession, loadSession, saveSession, type Session } from './lib/session.js';
import { ApiReference } from './screens/api-reference.js';
import { CallDetail } from './screens/call-detail.js';
import { BulkJobs } from './screens/bulk-jobs.js';
import { CallLog } from './screens/call-log.js';
import { EnvironmentSwitcher } from './screens/environment-switcher.js';
import { EventDetail } from './screens/event-detail.js';
import { EventLog } from './screens/event-log.js';
import { RecordDetail } from './screens/record-detail.js';
import { Records } from './screens/records.js';
import { SignIn } from './screens/sign-in.js';
import { Tokens } from './screens/tokens.js';
import { WebhookEditor } from './screens/webhook-editor.js';
import { WebhookList } from './screens/webhook-list.js';
import { WebhookPage } from './screens/webhook-page.js';

function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const update = () => setRoute(parseRoute(location.hash));
    window.addEventListener('hashchange', update);
    return () => window.removeEventListener('hashchange', update);
  }, []);
  return route;
}

export function App() {
  const [session, setSession] = useState<Session | null>(() => loadSession());
  const [expired, setExpired] = useState<string | null>(null);
  const [toast, setToast] = useState<string | null>(null);
  const route = useRoute();

  const signOut = useCallback((reason?: string) => {
    clearSession();
    setSession(null);
    setExpired(reason ?? null);
  }, []);

  const client = useMemo(
    () =>
      session ? new ApiClient(session, (failure: ApiFailure) => signOut(failure.message)) : null,
    [session, signOut],
  );

  useEffect(() => {
    if (!toast) return undefined;
    const timer = setTimeout(() => setToast(null), 4000);
    return () => clearTimeout(timer);
  }, [toast]);

  if (!session || !client) {
    return (
      <SignIn
        notice={expired}
        onSignedIn={(next) => {
          saveSession(next);
          setExpired(null);
          setSession(next);
          if (!location.hash || location.hash === '#/') {
            location.hash = next.access === 'admin' ? '#/webhooks' : '#/records';
          }
        }}
      />
    );
  }

  const [section = session.access === 'admin' ? 'webhooks' : 'records', id, sub] = route.segments;
  const nav = [
    { key: 'webhooks', label: 'Webhooks', admin: true },
    { key: 'calls', label: 'Call log', admin: true },
    { key: 'events', label: 'Events', admin: true },
    { key: 'jobs', label: 'Bulk jobs', admin: true },
    { key: 'records', label: 'Records', admin: false },
    { key: 'tokens', label: 'Tokens', admin: true },
    { key: 'api', label: 'API', admin: false },
  ].filter((entry) => !entry.admin || session.access === 'admin');

  return (
    <AppContext.Provider value={{ client, session, notify: setToast }}>
      <a class="skip-link" href="#main">
        Skip to content
      </a>
      <header class="topbar">
        <a class="brand" href="#/">
          <span class="brand-mark" aria-hidden="true">
            ◆
          </span>{' '}
          Herald
        </a>
        <nav class="mainnav" aria-label="Sections">
          {nav.map((entry) => (
            <a
              key={entry.key}
              href={`#/${entry.key}`}
              aria-current={section === entry.key ? 'page' : undefined}
            >
              {entry.label}
            </a>
          ))}
        </nav>
        <div class="topbar-tools">
          <EnvironmentSwitcher
            current={session.environment}
            onSwitch={(environment) => {
              const next = { ...session, environment };
              saveSession(next);
              setSession(next);
              setToast(`Switched to environment ${environment}`);
            }}
          />
          <button type="button" class="button button-quiet" onClick={() => signOut()}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main" class="main" tabIndex={-1}>
        <Screen section={section} id={id} sub={sub} route={route} access={session.access} />
      </main>
      {toast && (
        <div class="toast" role="status" aria-live="polite">
          {toast}
        </div>
      )}
    </AppContext.Provider>
  );
}

function Screen({
  section,
  id,
  sub,
  route,
  access,
}: {
  section: string;
  id: string | undefined;
  sub: string | undefined;
  route: Route;
  access: Session['access'];
}) {
  if (access !== 'admin' && ['webhooks', 'calls', 'events', 'jobs', 'tokens'].includes(section)) {
    return (
      <div class="note note-error" role="alert">
        This token has the read_only role: webhooks, the call log, events, bulk jobs and tokens need
        an admin token.
      </div>
    );
  }
  switch (section) {
    case 'webhooks':
      if (id === 'new') return <WebhookEditor key="new" id={null} />;
      if (id && sub === 'edit') return <WebhookEditor key={id} id={id} />;
      if (id) return <WebhookPage key={id} id={id} params={route.params} />;
      return <WebhookList params={route.params} />;
    case 'calls':
      if (id) return <CallDetail key={id} id={id} />;
      return <CallLog params={route.params} />;
    case 'events':
      if (id) return <EventDetail key={id} id={id} />;
      return <EventLog params={route.params} />;
    case 'jobs':
      return <BulkJobs id={id} />;
    case 'records':
      if (id) return <RecordDetail key={id} id={id} params={route.params} />;
      return <Records params={route.params} />;
    case 'tokens':
      return <Tokens />;
    case 'api':
      return <ApiReference />;
    default:
      return (
        <div class="state state-empty">
          <p>Nothing here.</p>
          <a href="#/">Back to the start</a>
        </div>
      );
  }
}
