import type { Credentials } from './api.js';

/**
 * The signed-in token lives in sessionStorage: it survives a reload of this tab, is never shared
 * with other tabs, goes away when the tab closes, and never appears in a URL or in history.
 */
const KEY = 'herald.console.session';
const RECENT_ENVIRONMENTS = 'herald.console.environments';

export type Access = 'admin' | 'read_only';

export interface Session extends Credentials {
  access: Access;
}

export function loadSession(): Session | null {
  try {
    const raw = sessionStorage.getItem(KEY);
    if (!raw) return null;
    const value = JSON.parse(raw) as Partial<Session>;
    if (typeof value.token !== 'string' || !value.token) return null;
    return {
      token: value.token,
      environment: typeof value.environment === 'string' ? value.environment : 'main',
      access: value.access === 'read_only' ? 'read_only' : 'admin',
    };
  } catch {
    return null;
  }
}

export function saveSession(session: Session): void {
  sessionStorage.setItem(KEY, JSON.stringify(session));
  rememberEnvironment(session.environment);
}

export function clearSession(): void {
  sessionStorage.removeItem(KEY);
}

/** Environments used in this tab, offered by the switcher (the API has no list of them). */
export function recentEnvironments(): string[] {
  try {
    const list = JSON.parse(sessionStorage.getItem(RECENT_ENVIRONMENTS) ?? '[]') as unknown;
    const names = Array.isArray(list) ? list.filter((x): x is string => typeof x === 'string') : [];
    return names.includes('main') ? names : ['main', ...names];
  } catch {
    return ['main'];
  }
}

function rememberEnvironment(environment: string): void {
  const names = recentEnvironments().filter((name) => name !== environment);
  sessionStorage.setItem(RECENT_ENVIRONMENTS, JSON.stringify([environment, ...names].slice(0, 10)));
}
