import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { ApiClient } from './lib/api.js';
import type { Session } from './lib/session.js';

export interface AppContextValue {
  client: ApiClient;
  session: Session;
  /** Shows a short confirmation at the bottom of the screen. */
  notify: (message: string) => void;
}

export const AppContext = createContext<AppContextValue | null>(null);

export function useApp(): AppContextValue {
  const value = useContext(AppContext);
  if (!value) throw new Error('useApp outside the signed-in layout');
  return value;
}

export function navigate(hash: string): void {
  if (location.hash !== hash) location.hash = hash;
}
