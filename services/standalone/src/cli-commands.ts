import { parseArgs } from 'node:util';
import { isRole, errorMessage } from '@herald/contract';
import { ConfigError, commonEnv, parseEnv } from '@herald/runtime';
import { createToken, listTokens, migrate, openDb, revokeToken, type Db } from '@herald/store';
import { z } from 'zod';
import { acquirePidLock, PidLockError } from './pid-lock.js';

const USAGE = `Usage: herald <command>

  migrate                                   apply pending database migrations
  tokens create --name <name> --role <role> create an API token (roles: admin, read_only, producer);
                                            the token is printed once and stored only as a hash
  tokens list                               list tokens (id, name, role, hint, state)
  tokens revoke <id>                        revoke a token

Uses DATABASE_URL, or the embedded database under HERALD_DATA_DIR (default .herald) when unset;
the embedded database can be used by one process at a time, so stop Herald before using it here.`;

const CliConfig = z.object({
  DATABASE_URL: commonEnv.DATABASE_URL,
  HERALD_DATA_DIR: commonEnv.HERALD_DATA_DIR,
});

/** Where the commands write: the process's own streams, or a test's buffers. */
export interface CliOutput {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
}

async function withDb<T>(env: NodeJS.ProcessEnv, fn: (db: Db) => Promise<T>): Promise<T> {
  const config = parseEnv(CliConfig, env);
  const release = config.DATABASE_URL
    ? undefined
    : await acquirePidLock(`${config.HERALD_DATA_DIR}/herald.pid`);
  const db = await openDb({
    databaseUrl: config.DATABASE_URL,
    dataDir: `${config.HERALD_DATA_DIR}/pgdata`,
    maxConnections: 1,
    applicationName: 'herald-cli',
  });
  try {
    await migrate(db);
    return await fn(db);
  } finally {
    await db.close();
    await release?.();
  }
}

class UsageError extends Error {}

async function run(argv: string[], env: NodeJS.ProcessEnv, out: CliOutput): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { name: { type: 'string' }, role: { type: 'string' }, help: { type: 'boolean' } },
  });
  const [command, sub, arg] = positionals;
  if (values.help || !command) {
    out.stdout.write(`${USAGE}\n`);
    return;
  }
  if (command === 'migrate') {
    await withDb(env, () => Promise.resolve());
    out.stdout.write('migrations applied\n');
    return;
  }
  if (command !== 'tokens') throw new UsageError(`unknown command ${command}`);
  switch (sub) {
    case 'create': {
      const { name, role } = values;
      if (!name) throw new UsageError('tokens create needs --name');
      if (!role || !isRole(role))
        throw new UsageError('tokens create needs --role admin|read_only|producer');
      const { token, record } = await withDb(env, (db) => createToken(db, { name, role }));
      out.stderr.write(
        `created token ${record.id} (${record.role}) "${record.name}"; it is shown once:\n`,
      );
      out.stdout.write(`${token}\n`);
      return;
    }
    case 'list': {
      const tokens = await withDb(env, listTokens);
      for (const t of tokens) {
        out.stdout.write(`${t.id}\t${t.role}\t${t.name}\t${t.hint}\tactive\n`);
      }
      return;
    }
    case 'revoke': {
      if (!arg) throw new UsageError('tokens revoke needs a token id');
      const revoked = await withDb(env, (db) => revokeToken(db, arg));
      if (!revoked.ok && revoked.reason === 'last_admin') {
        throw new Error(`token ${arg} is the last active admin token`);
      }
      if (!revoked.ok) throw new UsageError(`no active token with id ${arg}`);
      out.stdout.write(`revoked token ${arg}\n`);
      return;
    }
    case undefined:
    default:
      throw new UsageError(`unknown tokens command ${String(sub)}`);
  }
}

/**
 * Runs one `herald` command (argv without node and the script) with the variables of `env`;
 * resolves to the exit code: 0, 1 (it failed), 2 (a usage error).
 */
export async function runCli(
  argv: string[],
  env: NodeJS.ProcessEnv,
  out: CliOutput,
): Promise<number> {
  try {
    await run(argv, env, out);
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      out.stderr.write(`herald: ${error.message}\n\n${USAGE}\n`);
      return 2;
    }
    if (error instanceof ConfigError || error instanceof PidLockError) {
      out.stderr.write(`herald: ${error.message}\n`);
      return 1;
    }
    if (
      error instanceof Error &&
      (error as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION'
    ) {
      out.stderr.write(`herald: ${error.message}\n\n${USAGE}\n`);
      return 2;
    }
    out.stderr.write(`herald: ${errorMessage(error)}\n`);
    return 1;
  }
}
