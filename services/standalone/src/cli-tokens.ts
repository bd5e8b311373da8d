import { readFile } from 'node:fs/promises';
import { errorMessage, type Role } from '@herald/contract';
import {
  createToken,
  listTokens,
  regenerateToken,
  revokeToken,
  type ApiToken,
  type Db,
  type TokenChange,
} from '@herald/store';

/** A token as `herald tokens` prints it, whether it came from the database or the API. */
export interface TokenLine {
  id: string;
  role: string;
  name: string;
  hint: string;
  bootstrap: boolean;
  lastUsedAt: string | null;
}

/** Where `herald tokens` manages tokens: the database (Herald stopped), or a running Herald. */
export interface TokenBackend {
  create(input: { name: string; role: Role }): Promise<{ value: string; token: TokenLine }>;
  list(): Promise<TokenLine[]>;
  revoke(id: string): Promise<TokenLine>;
  regenerate(id: string): Promise<{ value: string; token: TokenLine }>;
}

/** A command that ran and failed for a reason to tell as it is (exit code 1). */
export class CliFailure extends Error {
  override name = 'CliFailure';
}

const lineOf = (token: ApiToken): TokenLine => ({
  id: token.id,
  role: token.role,
  name: token.name,
  hint: token.hint,
  bootstrap: token.hardcodedType === 'bootstrap',
  lastUsedAt: token.lastUsedAt?.toISOString() ?? null,
});

/** The failure of a refused change, said as the API says it (docs/api.md, Access tokens). */
function refused(id: string, change: Extract<TokenChange<object>, { ok: false }>): CliFailure {
  switch (change.reason) {
    case 'not_found':
      return new CliFailure(`no active token with id ${id}`);
    case 'last_admin':
      return new CliFailure(
        `token ${id} is the last active admin token: create another admin token before revoking it`,
      );
    case 'bootstrap':
      return new CliFailure(
        `token ${id} is the bootstrap admin token, whose value is configuration (HERALD_ADMIN_TOKEN or the admin-token file): change it there and restart`,
      );
  }
}

/** The tokens in the database, each command in its own connection (`withDb`). */
export function databaseBackend(
  withDb: <T>(fn: (db: Db) => Promise<T>) => Promise<T>,
): TokenBackend {
  return {
    async create(input) {
      const { token, record } = await withDb((db) => createToken(db, input));
      return { value: token, token: lineOf(record) };
    },
    async list() {
      return (await withDb(listTokens)).map(lineOf);
    },
    async revoke(id) {
      const change = await withDb((db) => revokeToken(db, id));
      if (!change.ok) throw refused(id, change);
      return lineOf(change.token);
    },
    async regenerate(id) {
      const change = await withDb((db) => regenerateToken(db, id));
      if (!change.ok) throw refused(id, change);
      return { value: change.value, token: lineOf(change.token) };
    },
  };
}

interface AccessTokenResource {
  id: string;
  attributes: {
    name: string;
    token: string | null;
    token_hint: string;
    hardcoded_type: string | null;
    last_used_at: string | null;
  };
  relationships: { role: { data: { id: string } } };
}

const lineOfResource = (resource: AccessTokenResource): TokenLine => ({
  id: resource.id,
  role: resource.relationships.role.data.id,
  name: resource.attributes.name,
  hint: resource.attributes.token_hint,
  bootstrap: resource.attributes.hardcoded_type === 'bootstrap',
  lastUsedAt: resource.attributes.last_used_at,
});

/** The messages of an error envelope (docs/errors.md), `CODE: message` each. */
function describeEnvelope(url: string, status: number, body: unknown): string {
  const entries = (body as { data?: unknown } | null)?.data;
  const said = Array.isArray(entries)
    ? entries.map((entry: { attributes?: { code?: string; details?: { message?: string } } }) =>
        [entry.attributes?.code, entry.attributes?.details?.message].filter(Boolean).join(': '),
      )
    : [];
  return `Herald at ${url} answered ${status}${said.length ? ` ${said.join('; ')}` : ''}`;
}

/**
 * A running Herald's /access_tokens, with an admin token: what the console and the official
 * client use, so that a change applies at once and the embedded database keeps one opener.
 * `unreachable` says what to do when nothing answers at `url`.
 */
export function apiBackend(url: string, token: string, unreachable: string): TokenBackend {
  async function call(method: string, path: string, body?: unknown): Promise<unknown> {
    let response: Response;
    try {
      response = await fetch(`${url.replace(/\/+$/, '')}${path}`, {
        method,
        headers: {
          Authorization: `Bearer ${token}`,
          Accept: 'application/json',
          'X-Api-Version': '3',
          ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(30_000),
      });
    } catch (error) {
      throw new CliFailure(
        `no answer from Herald at ${url} (${errorMessage((error as { cause?: unknown }).cause ?? error)}): ${unreachable}`,
      );
    }
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      throw new CliFailure(
        `${url} answered ${response.status} with something else than JSON: is it Herald?`,
      );
    }
    if (!response.ok) throw new CliFailure(describeEnvelope(url, response.status, parsed));
    return (parsed as { data: unknown }).data;
  }

  const withValue = (resource: AccessTokenResource) => ({
    value: resource.attributes.token ?? '',
    token: lineOfResource(resource),
  });
  return {
    async create({ name, role }) {
      const created = await call('POST', '/access_tokens', {
        data: {
          type: 'access_token',
          attributes: { name },
          relationships: { role: { data: { type: 'role', id: role } } },
        },
      });
      return withValue(created as AccessTokenResource);
    },
    async list() {
      return ((await call('GET', '/access_tokens')) as AccessTokenResource[]).map(lineOfResource);
    },
    async revoke(id) {
      const path = `/access_tokens/${encodeURIComponent(id)}`;
      return lineOfResource((await call('DELETE', path)) as AccessTokenResource);
    },
    async regenerate(id) {
      const path = `/access_tokens/${encodeURIComponent(id)}/regenerate_token`;
      return withValue((await call('POST', path)) as AccessTokenResource);
    },
  };
}

/**
 * The admin token the CLI sends to a running Herald: HERALD_TOKEN, else the single process's
 * HERALD_DATA_DIR/admin-token; undefined when there is neither.
 */
export async function cliAdminToken(
  envToken: string | undefined,
  tokenFile: string,
): Promise<string | undefined> {
  if (envToken) return envToken;
  try {
    return (await readFile(tokenFile, 'utf8')).trim() || undefined;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}
