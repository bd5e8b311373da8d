import { createHash, randomBytes } from 'node:crypto';
import type { Role } from '@herald/contract';
import type { Queryable } from './db.js';

export interface ApiToken {
  id: string;
  name: string;
  role: Role;
  hint: string;
  createdAt: Date;
  revokedAt: Date | null;
}

/** Tokens are random, high-entropy strings, so a plain SHA-256 is a sufficient one-way hash. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

export function generateToken(): string {
  return `hrld_${randomBytes(24).toString('base64url')}`;
}

interface TokenRow extends Record<string, unknown> {
  id: string;
  name: string;
  role: Role;
  token_hint: string;
  created_at: Date;
  revoked_at: Date | null;
}

const toToken = (row: TokenRow): ApiToken => ({
  id: row.id,
  name: row.name,
  role: row.role,
  hint: row.token_hint,
  createdAt: row.created_at,
  revokedAt: row.revoked_at,
});

/** Creates a token; the clear text is returned once and never stored. */
export async function createToken(
  db: Queryable,
  input: { name: string; role: Role },
): Promise<{ token: string; record: ApiToken }> {
  const token = generateToken();
  const { rows } = await db.query<TokenRow>(
    `INSERT INTO api_tokens (name, role, token_hash, token_hint)
     VALUES ($1, $2, $3, $4)
     RETURNING id, name, role, token_hint, created_at, revoked_at`,
    [input.name, input.role, hashToken(token), `${token.slice(0, 9)}…`],
  );
  return { token, record: toToken(rows[0]!) };
}

export async function listTokens(db: Queryable): Promise<ApiToken[]> {
  const { rows } = await db.query<TokenRow>(
    `SELECT id, name, role, token_hint, created_at, revoked_at FROM api_tokens ORDER BY id`,
  );
  return rows.map(toToken);
}

/** Revokes by id; false when there is no such active token. */
export async function revokeToken(db: Queryable, id: string): Promise<boolean> {
  if (!/^\d{1,18}$/.test(id)) return false;
  const { rowCount } = await db.query(
    `UPDATE api_tokens SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL`,
    [id],
  );
  return rowCount > 0;
}

/** The active token whose hash matches, if any. */
export async function findTokenByHash(db: Queryable, tokenHash: string): Promise<ApiToken | null> {
  const { rows } = await db.query<TokenRow>(
    `SELECT id, name, role, token_hint, created_at, revoked_at FROM api_tokens
     WHERE token_hash = $1 AND revoked_at IS NULL`,
    [tokenHash],
  );
  return rows[0] ? toToken(rows[0]) : null;
}
