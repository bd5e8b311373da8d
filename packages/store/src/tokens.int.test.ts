import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestDb, type TestDb } from '@herald/testkit';
import {
  createToken,
  findToken,
  findTokenByHash,
  hashToken,
  listTokens,
  markTokenUsed,
  regenerateToken,
  registerBootstrapToken,
  revokeToken,
  updateToken,
} from '@herald/store';

// tokens.ts: what may change a token, and the admin token that comes from configuration.
describe.for(['postgres', 'embedded'] as const)('API tokens on %s', (kind) => {
  let t: TestDb;
  beforeEach(async () => {
    t = await createTestDb(kind);
  });
  afterEach(() => t.cleanup());

  const bootstrap = 'hrld_admin_configured-value-0123456789';

  it('stores the configured admin token once, listed as bootstrap, with a hint of four characters', async () => {
    const first = await registerBootstrapToken(t.db, {
      token: bootstrap,
      name: 'HERALD_ADMIN_TOKEN',
    });
    const again = await registerBootstrapToken(t.db, {
      token: bootstrap,
      name: 'HERALD_ADMIN_TOKEN',
    });
    expect(first).toMatchObject({
      active: true,
      record: { role: 'admin', hardcodedType: 'bootstrap' },
    });
    expect(again.record.id).toBe(first.record.id);
    expect(first.record.hint).toBe('hrld_admin_conf…');
    expect((await listTokens(t.db)).map((token) => token.id)).toEqual([first.record.id]);
    expect((await findTokenByHash(t.db, hashToken(bootstrap)))?.id).toBe(first.record.id);
  });

  it('revokes the previous bootstrap token when the configuration names another value', async () => {
    const old = await registerBootstrapToken(t.db, {
      token: bootstrap,
      name: 'HERALD_ADMIN_TOKEN',
    });
    const next = await registerBootstrapToken(t.db, {
      token: `${bootstrap}-rotated`,
      name: 'HERALD_ADMIN_TOKEN',
    });
    expect(next.active).toBe(true);
    expect(await findTokenByHash(t.db, hashToken(bootstrap))).toBeNull();
    expect((await listTokens(t.db)).map((token) => token.id)).toEqual([next.record.id]);
    expect(old.record.id).not.toBe(next.record.id);
  });

  it('keeps a revoked bootstrap token revoked at the next start, and the others as they are', async () => {
    const { record } = await registerBootstrapToken(t.db, { token: bootstrap, name: 'file' });
    const other = await createToken(t.db, { name: 'ops', role: 'admin' });
    expect(await revokeToken(t.db, record.id)).toMatchObject({ ok: true });
    const restarted = await registerBootstrapToken(t.db, { token: bootstrap, name: 'file' });
    expect(restarted.active).toBe(false);
    expect(await findTokenByHash(t.db, hashToken(bootstrap))).toBeNull();
    expect((await listTokens(t.db)).map((token) => token.id)).toEqual([other.record.id]);
  });

  it('never revokes or demotes the last active admin token', async () => {
    const { record: admin } = await registerBootstrapToken(t.db, {
      token: bootstrap,
      name: 'file',
    });
    const { record: ops } = await createToken(t.db, { name: 'ops', role: 'admin' });
    const { record: feeder } = await createToken(t.db, { name: 'feeder', role: 'producer' });
    expect(await revokeToken(t.db, feeder.id)).toMatchObject({ ok: true });
    expect(await updateToken(t.db, ops.id, { role: 'read_only' })).toMatchObject({
      ok: true,
      token: { role: 'read_only' },
    });
    expect(await revokeToken(t.db, admin.id)).toEqual({ ok: false, reason: 'last_admin' });
    expect(await updateToken(t.db, ops.id, { role: 'admin' })).toMatchObject({ ok: true });
    expect(await updateToken(t.db, ops.id, { role: 'producer' })).toMatchObject({ ok: true });
    expect(await updateToken(t.db, ops.id, { role: 'admin' })).toMatchObject({ ok: true });
    expect(await revokeToken(t.db, admin.id)).toMatchObject({ ok: true });
    expect(await updateToken(t.db, ops.id, { role: 'producer' })).toEqual({
      ok: false,
      reason: 'last_admin',
    });
    expect(await revokeToken(t.db, ops.id)).toEqual({ ok: false, reason: 'last_admin' });
    expect(await findToken(t.db, ops.id)).toMatchObject({ role: 'admin' });
  });

  it('leaves the bootstrap token its name, role and value', async () => {
    const { record } = await registerBootstrapToken(t.db, { token: bootstrap, name: 'file' });
    await createToken(t.db, { name: 'ops', role: 'admin' });
    expect(await updateToken(t.db, record.id, { name: 'renamed' })).toEqual({
      ok: false,
      reason: 'bootstrap',
    });
    expect(await regenerateToken(t.db, record.id)).toEqual({ ok: false, reason: 'bootstrap' });
    expect((await findTokenByHash(t.db, hashToken(bootstrap)))?.name).toBe('file');
  });

  it('regenerates a value in place: same id, name and role, the old value stops working', async () => {
    const { token, record } = await createToken(t.db, { name: 'cms', role: 'producer' });
    const change = await regenerateToken(t.db, record.id);
    if (!change.ok) throw new Error(change.reason);
    expect(change.value).toMatch(/^hrld_[A-Za-z0-9_-]{32}$/);
    expect(change.value).not.toBe(token);
    expect(change.token).toMatchObject({ id: record.id, name: 'cms', role: 'producer' });
    expect(change.token.hint).toBe(`${change.value.slice(0, 9)}…`);
    expect(await findTokenByHash(t.db, hashToken(token))).toBeNull();
    expect((await findTokenByHash(t.db, hashToken(change.value)))?.id).toBe(record.id);
  });

  it('answers not_found for unknown, revoked and malformed ids', async () => {
    const { record } = await createToken(t.db, { name: 'gone', role: 'read_only' });
    await revokeToken(t.db, record.id);
    for (const id of [record.id, '999', '0', 'abc', '1; DROP TABLE api_tokens', '9'.repeat(30)]) {
      expect(await revokeToken(t.db, id)).toEqual({ ok: false, reason: 'not_found' });
      expect(await updateToken(t.db, id, { name: 'x' })).toEqual({
        ok: false,
        reason: 'not_found',
      });
      expect(await regenerateToken(t.db, id)).toEqual({ ok: false, reason: 'not_found' });
      expect(await findToken(t.db, id)).toBeNull();
    }
  });

  it('marks a use at most once a minute', async () => {
    const { record } = await createToken(t.db, { name: 'reader', role: 'read_only' });
    await markTokenUsed(t.db, record.id);
    const first = (await findToken(t.db, record.id))?.lastUsedAt;
    expect(first).toBeInstanceOf(Date);
    await markTokenUsed(t.db, record.id);
    expect((await findToken(t.db, record.id))?.lastUsedAt).toEqual(first);
  });
});

describe('revoking admin tokens concurrently (Postgres)', () => {
  it('waits for a revocation in flight and then refuses the last admin token', async () => {
    const t = await createTestDb('postgres');
    const other = t.connect();
    try {
      const a = (await createToken(t.db, { name: 'a', role: 'admin' })).record.id;
      const b = (await createToken(t.db, { name: 'b', role: 'admin' })).record.id;
      // Another process revokes b: its transaction holds the lock and has not committed yet.
      let revokingA: ReturnType<typeof revokeToken> | undefined;
      await other.transaction(async (tx) => {
        await tx.query(`SELECT pg_advisory_xact_lock(hashtext('herald:api_tokens'))`);
        await tx.query(`UPDATE api_tokens SET revoked_at = now() WHERE id = $1`, [b]);
        let settled = false;
        revokingA = revokeToken(t.db, a);
        void revokingA.finally(() => (settled = true));
        // Until a's revocation waits for that lock (or, without one, has answered).
        await expect
          .poll(async () => {
            const { rows } = await t.db.query<{ n: number }>(
              `SELECT count(*)::int AS n FROM pg_stat_activity
               WHERE application_name = $1 AND wait_event_type = 'Lock'`,
              [t.schema],
            );
            return settled || rows[0]!.n > 0;
          })
          .toBe(true);
      });
      expect(await revokingA).toEqual({ ok: false, reason: 'last_admin' });
      expect((await listTokens(t.db)).map((token) => token.id)).toEqual([a]);
    } finally {
      await other.close();
      await t.cleanup();
    }
  });
});
