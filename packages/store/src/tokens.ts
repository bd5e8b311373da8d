import { createHash, randomBytes } from 'node:crypto';
import type { Role } from '@herald/contract';
import type { Db, Queryable } from './db.js';

/** An active API token, without its value (only a SHA-256 of it is stored). */
export interface ApiToken {
  id: string;
  name: string;
  role: Role;
  /** The value's first characters, to recognize it (`hrld_AbCd…`). */
  hint: string;
  /** 'bootstrap': the admin token whose value is configuration (registerBootstrapToken). */
  hardcodedType: 'bootstrap' | null;
  createdAt: Date;
  updatedAt: Date;
  /** Set at most once a minute when a request is authenticated with it (markTokenUsed). */
  lastUsedAt: Date | null;
}

/** Tokens are random, high-entropy strings, so a plain SHA-256 is a sufficient one-way hash. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

function generateToken(): string {
  return `hrld_${randomBytes(24).toString('base64url')}`;
}

/** Herald's own prefix and four characters of the secret (a chosen bootstrap token: four). */
function tokenHint(token: string): string {
  const prefix = /^hrld_(admin_)?/.exec(token)?.[0] ?? '';
  return `${token.slice(0, prefix.length + 4)}…`;
}

interface TokenRow extends Record<string, unknown> {
  id: string;
  name: string;
  role: Role;
  token_hint: string;
  hardcoded_type: 'bootstrap' | null;
  created_at: Date;
  updated_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

const COLUMNS = `id, name, role, token_hint, hardcoded_type, created_at, updated_at, last_used_at,
  revoked_at`;

const toToken = (row: TokenRow): ApiToken => ({
  id: row.id,
  name: row.name,
  role: row.role,
  hint: row.token_hint,
  hardcodedType: row.hardcoded_type,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
  lastUsedAt: row.last_used_at,
});

const isTokenId = (id: string): boolean => /^[1-9]\d{0,17}$/.test(id);

/**
 * Changes that may leave no admin token, or race a bootstrap registration, take this lock first,
 * so that two concurrent revocations of the last two admins cannot both succeed.
 */
async function lockTokens(tx: Queryable): Promise<void> {
  await tx.query(`SELECT pg_advisory_xact_lock(hashtext('herald:api_tokens'))`);
}

/** Active admin tokens other than `id`. */
async function otherAdmins(tx: Queryable, id: string): Promise<number> {
  const { rows } = await tx.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM api_tokens
     WHERE role = 'admin' AND revoked_at IS NULL AND id <> $1`,
    [id],
  );
  return rows[0]?.n ?? 0;
}

async function findForUpdate(tx: Queryable, id: string): Promise<TokenRow | undefined> {
  const { rows } = await tx.query<TokenRow>(
    `SELECT ${COLUMNS} FROM api_tokens WHERE id = $1 AND revoked_at IS NULL FOR UPDATE`,
    [id],
  );
  return rows[0];
}

/** Creates a token; the clear text is returned once and never stored. */
export async function createToken(
  db: Queryable,
  input: { name: string; role: Role },
): Promise<{ token: string; record: ApiToken }> {
  const token = generateToken();
  const { rows } = await db.query<TokenRow>(
    `INSERT INTO api_tokens (name, role, token_hash, token_hint)
     VALUES ($1, $2, $3, $4)
     RETURNING ${COLUMNS}`,
    [input.name, input.role, hashToken(token), tokenHint(token)],
  );
  return { token, record: toToken(rows[0]!) };
}

/** The active tokens, oldest first (revoked ones stay in the table, unlisted). */
export async function listTokens(db: Queryable): Promise<ApiToken[]> {
  const { rows } = await db.query<TokenRow>(
    `SELECT ${COLUMNS} FROM api_tokens WHERE revoked_at IS NULL ORDER BY id`,
  );
  return rows.map(toToken);
}

/** One active token by id. */
export async function findToken(db: Queryable, id: string): Promise<ApiToken | null> {
  if (!isTokenId(id)) return null;
  const { rows } = await db.query<TokenRow>(
    `SELECT ${COLUMNS} FROM api_tokens WHERE id = $1 AND revoked_at IS NULL`,
    [id],
  );
  return rows[0] ? toToken(rows[0]) : null;
}

/** The active token whose hash matches, if any. */
export async function findTokenByHash(db: Queryable, tokenHash: string): Promise<ApiToken | null> {
  const { rows } = await db.query<TokenRow>(
    `SELECT ${COLUMNS} FROM api_tokens WHERE token_hash = $1 AND revoked_at IS NULL`,
    [tokenHash],
  );
  return rows[0] ? toToken(rows[0]) : null;
}

/** Records that the token authenticated a request; a no-op within a minute of the last mark. */
export async function markTokenUsed(db: Queryable, id: string): Promise<void> {
  await db.query(
    `UPDATE api_tokens SET last_used_at = now()
     WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`,
    [id],
  );
}

/** What a change of a token came to; the HTTP status of each case is beside it. */
export type TokenChange<T> =
  /** 200 */
  | ({ ok: true } & T)
  /** 404 NOT_FOUND: no active token with this id. */
  | { ok: false; reason: 'not_found' }
  /** 422 LAST_ADMIN_TOKEN: the change would leave no active admin token. */
  | { ok: false; reason: 'last_admin' }
  /** 422 NON_EDITABLE_ACCESS_TOKEN: the bootstrap token's name, role and value are configuration. */
  | { ok: false; reason: 'bootstrap' };

/** Revokes a token (it stays in the table, unlisted); never the last active admin token. */
export async function revokeToken(db: Db, id: string): Promise<TokenChange<{ token: ApiToken }>> {
  if (!isTokenId(id)) return { ok: false, reason: 'not_found' };
  return db.transaction(async (tx) => {
    await lockTokens(tx);
    const row = await findForUpdate(tx, id);
    if (!row) return { ok: false, reason: 'not_found' };
    if (row.role === 'admin' && (await otherAdmins(tx, id)) === 0) {
      return { ok: false, reason: 'last_admin' };
    }
    const { rows } = await tx.query<TokenRow>(
      `UPDATE api_tokens SET revoked_at = now(), updated_at = now() WHERE id = $1
       RETURNING ${COLUMNS}`,
      [id],
    );
    return { ok: true, token: toToken(rows[0]!) };
  });
}

/** Renames a token or changes its role; never demotes the last active admin token. */
export async function updateToken(
  db: Db,
  id: string,
  change: { name?: string | undefined; role?: Role | undefined },
): Promise<TokenChange<{ token: ApiToken }>> {
  if (!isTokenId(id)) return { ok: false, reason: 'not_found' };
  return db.transaction(async (tx) => {
    await lockTokens(tx);
    const row = await findForUpdate(tx, id);
    if (!row) return { ok: false, reason: 'not_found' };
    if (row.hardcoded_type === 'bootstrap') return { ok: false, reason: 'bootstrap' };
    const role = change.role ?? row.role;
    if (row.role === 'admin' && role !== 'admin' && (await otherAdmins(tx, id)) === 0) {
      return { ok: false, reason: 'last_admin' };
    }
    const { rows } = await tx.query<TokenRow>(
      `UPDATE api_tokens SET name = $2, role = $3, updated_at = now() WHERE id = $1
       RETURNING ${COLUMNS}`,
      [id, change.name ?? row.name, role],
    );
    return { ok: true, token: toToken(rows[0]!) };
  });
}

/** Gives a token a new value (same id, name and role); the old value stops working. */
export async function regenerateToken(
  db: Db,
  id: string,
): Promise<TokenChange<{ token: ApiToken; value: string }>> {
  if (!isTokenId(id)) return { ok: false, reason: 'not_found' };
  return db.transaction(async (tx) => {
    const row = await findForUpdate(tx, id);
    if (!row) return { ok: false, reason: 'not_found' };
    if (row.hardcoded_type === 'bootstrap') return { ok: false, reason: 'bootstrap' };
    const value = generateToken();
    const { rows } = await tx.query<TokenRow>(
      `UPDATE api_tokens SET token_hash = $2, token_hint = $3, updated_at = now() WHERE id = $1
       RETURNING ${COLUMNS}`,
      [id, hashToken(value), tokenHint(value)],
    );
    return { ok: true, token: toToken(rows[0]!), value };
  });
}

/**
 * Stores the configured admin token (HERALD_ADMIN_TOKEN, or the single process's admin-token
 * file) as a token named `name`, once: listed, and revocable like the others. A revoked one
 * stays revoked. When it is active, a bootstrap token of another value (the configuration
 * changed) is revoked, as the old value stopped working before tokens were stored. `active`
 * says whether the configured value authenticates.
 */
export async function registerBootstrapToken(
  db: Db,
  input: { token: string; name: string },
): Promise<{ active: boolean; record: ApiToken }> {
  const hash = hashToken(input.token);
  return db.transaction(async (tx) => {
    await lockTokens(tx);
    await tx.query(
      `INSERT INTO api_tokens (name, role, token_hash, token_hint, hardcoded_type)
       VALUES ($1, 'admin', $2, $3, 'bootstrap')
       ON CONFLICT (token_hash) DO NOTHING`,
      [input.name, hash, tokenHint(input.token)],
    );
    const { rows } = await tx.query<TokenRow>(
      `SELECT ${COLUMNS} FROM api_tokens WHERE token_hash = $1`,
      [hash],
    );
    const row = rows[0]!;
    // A value that is some other token's is not a bootstrap admin token.
    const active = row.revoked_at === null && row.hardcoded_type === 'bootstrap';
    if (active) {
      await tx.query(
        `UPDATE api_tokens SET revoked_at = now(), updated_at = now()
         WHERE hardcoded_type = 'bootstrap' AND revoked_at IS NULL AND token_hash <> $1`,
        [hash],
      );
    }
    return { active, record: toToken(row) };
  });
}
