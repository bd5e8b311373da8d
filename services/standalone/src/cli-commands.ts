import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { AccessTokenName, isRole, errorMessage } from '@herald/contract';
import { ConfigError, commonEnv, parseEnv } from '@herald/runtime';
import {
  EmbeddedPostgresError,
  createPostgresDb,
  embeddedPostgresUrlFile,
  migrate,
  startEmbeddedPostgres,
  type Db,
} from '@herald/store';
import { z } from 'zod';
import {
  CliFailure,
  apiBackend,
  cliAdminToken,
  databaseBackend,
  type TokenBackend,
  type TokenLine,
} from './cli-tokens.js';
import {
  PgliteFolderError,
  embeddedPostgresDir,
  hasPgliteFolder,
  startEmbeddedDatabase,
} from './embedded-database.js';
import { ImportRefusedError, importPgliteFolder } from './import-pglite.js';
import { acquirePidLock, lockHolder, PidLockError } from './pid-lock.js';

const DEFAULT_URL = 'http://127.0.0.1:3000';

const USAGE = `Usage: herald <command>

  migrate                                   apply pending database migrations
  tokens create --name <name> --role <role> create an API token (roles: admin, read_only, producer);
                                            the token is printed once and stored only as a hash
  tokens list                               list the active tokens, the bootstrap admin one
                                            included: id, role, name, hint, last used, kind
  tokens revoke <id>                        revoke a token (never the last admin token)
  tokens regenerate <id>                    give a token a new value, printed once; the old one
                                            stops working
  import-pglite                             copy the PGlite database of an earlier Herald
                                            (HERALD_DATA_DIR/pgdata) into the embedded PostgreSQL

  --url <url>   manage the tokens of the Herald running there, through its API
                (default $HERALD_URL; see below)

While Herald runs on its embedded database (HERALD_DATA_DIR, default .herald), the tokens commands
talk to it through its API at --url, $HERALD_URL or ${DEFAULT_URL}, with the admin token in
$HERALD_TOKEN or HERALD_DATA_DIR/admin-token (so that its token cache hears of the change).
Otherwise, and for migrate always, they use the database: DATABASE_URL, or the embedded
PostgreSQL (the running Herald's server, or one started for the command when none runs).`;

const CliConfig = z.object({
  DATABASE_URL: commonEnv.DATABASE_URL,
  HERALD_DATA_DIR: commonEnv.HERALD_DATA_DIR,
});
type CliConfig = z.infer<typeof CliConfig>;

/** Where the commands write: the process's own streams, or a test's buffers. */
export interface CliOutput {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
}

class UsageError extends Error {}

const openCliDb = (url: string): Db =>
  createPostgresDb({ connectionString: url, maxConnections: 1, applicationName: 'herald-cli' });

/**
 * Runs fn on the database: DATABASE_URL, else the embedded PostgreSQL of the Herald running on
 * the data folder, else one started for the command (and stopped after it). `start` starts the
 * embedded server (the default refuses a data folder holding PGlite).
 */
async function withDb<T>(
  config: CliConfig,
  fn: (db: Db) => Promise<T>,
  start: typeof startEmbeddedDatabase = startEmbeddedDatabase,
): Promise<T> {
  const dataDir = config.HERALD_DATA_DIR;
  if (config.DATABASE_URL) return runOn(openCliDb(config.DATABASE_URL), fn);
  const lockFile = join(dataDir, 'herald.pid');
  const holder = await lockHolder(lockFile);
  if (holder !== undefined) {
    const urlFile = embeddedPostgresUrlFile(embeddedPostgresDir(dataDir));
    const url = await readFile(urlFile, 'utf8').catch(() => undefined);
    if (!url) {
      throw new PidLockError(
        `Process ${holder} holds the embedded database in ${dataDir} but has not started its ` +
          'PostgreSQL yet: try again in a moment.',
      );
    }
    return runOn(openCliDb(url.trim()), fn);
  }
  const release = await acquirePidLock(lockFile);
  try {
    const server = await start({ dataDir, port: 0, log: () => undefined });
    try {
      return await runOn(openCliDb(server.url), fn);
    } finally {
      await server.stop();
    }
  } finally {
    await release();
  }
}

async function runOn<T>(db: Db, fn: (db: Db) => Promise<T>): Promise<T> {
  try {
    await migrate(db);
    return await fn(db);
  } finally {
    await db.close();
  }
}

/** `herald import-pglite`: the embedded server is started without the PGlite folder's refusal. */
async function importPglite(config: CliConfig, out: CliOutput): Promise<void> {
  if (config.DATABASE_URL) {
    throw new UsageError('import-pglite copies into the embedded PostgreSQL: unset DATABASE_URL');
  }
  if (!(await hasPgliteFolder(config.HERALD_DATA_DIR))) {
    throw new UsageError(`no PGlite database in ${join(config.HERALD_DATA_DIR, 'pgdata')}`);
  }
  const { tables, rows } = await withDb(
    config,
    (db) => importPgliteFolder(config.HERALD_DATA_DIR, db),
    ({ dataDir, port, log }) =>
      startEmbeddedPostgres({ dir: embeddedPostgresDir(dataDir), port, log }),
  );
  out.stdout.write(
    `copied ${rows} rows of ${tables} tables into the embedded PostgreSQL; the PGlite folder is ` +
      `now ${join(config.HERALD_DATA_DIR, 'pgdata.imported')}\n`,
  );
}

/**
 * The running Herald's API when a URL is given or a Herald holds the embedded database (its
 * token cache then hears of the change at once); else the database.
 */
async function chooseBackend(
  config: CliConfig,
  env: NodeJS.ProcessEnv,
  givenUrl: string | undefined,
): Promise<TokenBackend> {
  const url = givenUrl ?? env['HERALD_URL'];
  const holder = config.DATABASE_URL
    ? undefined
    : await lockHolder(`${config.HERALD_DATA_DIR}/herald.pid`);
  if (url === undefined && holder === undefined) {
    return databaseBackend((fn) => withDb(config, fn));
  }
  const running =
    holder === undefined ? '' : `Herald (process ${holder}) holds the embedded database; `;
  const tokenFile = join(config.HERALD_DATA_DIR, 'admin-token');
  const token = await cliAdminToken(env['HERALD_TOKEN'], tokenFile);
  if (!token) {
    throw new CliFailure(
      `${running}the tokens commands talk to Herald through its API with an admin token: set HERALD_TOKEN (none is in ${tokenFile})`,
    );
  }
  return apiBackend(
    url ?? DEFAULT_URL,
    token,
    url === undefined
      ? `${running}pass --url or set HERALD_URL to where it listens`
      : 'is Herald running there?',
  );
}

const listLine = (t: TokenLine): string =>
  [
    t.id,
    t.role,
    t.name,
    t.hint,
    t.lastUsedAt ? `last used ${t.lastUsedAt}` : 'never used',
    t.bootstrap ? 'bootstrap' : 'created',
  ].join('\t');

async function run(argv: string[], env: NodeJS.ProcessEnv, out: CliOutput): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      role: { type: 'string' },
      url: { type: 'string' },
      help: { type: 'boolean' },
    },
  });
  const [command, sub, arg] = positionals;
  if (values.help || !command) {
    out.stdout.write(`${USAGE}\n`);
    return;
  }
  const config = parseEnv(CliConfig, env);
  if (command === 'migrate') {
    await withDb(config, () => Promise.resolve());
    out.stdout.write('migrations applied\n');
    return;
  }
  if (command === 'import-pglite') return importPglite(config, out);
  if (command !== 'tokens') throw new UsageError(`unknown command ${command}`);
  const tokens = () => chooseBackend(config, env, values.url);
  switch (sub) {
    case 'create': {
      const { role } = values;
      if (!values.name) throw new UsageError('tokens create needs --name');
      const name = AccessTokenName.safeParse(values.name);
      if (!name.success) throw new UsageError(`--name ${name.error.issues[0]?.message ?? ''}`);
      if (!role || !isRole(role))
        throw new UsageError('tokens create needs --role admin|read_only|producer');
      const { value, token } = await (await tokens()).create({ name: name.data, role });
      out.stderr.write(
        `created token ${token.id} (${token.role}) "${token.name}"; it is shown once:\n`,
      );
      out.stdout.write(`${value}\n`);
      return;
    }
    case 'list': {
      for (const token of await (await tokens()).list()) out.stdout.write(`${listLine(token)}\n`);
      return;
    }
    case 'revoke': {
      if (!arg) throw new UsageError('tokens revoke needs a token id');
      const token = await (await tokens()).revoke(arg);
      out.stdout.write(`revoked token ${token.id} (${token.role}) "${token.name}"\n`);
      return;
    }
    case 'regenerate': {
      if (!arg) throw new UsageError('tokens regenerate needs a token id');
      const { value, token } = await (await tokens()).regenerate(arg);
      out.stderr.write(
        `new value of token ${token.id} (${token.role}) "${token.name}"; the old one no longer works; it is shown once:\n`,
      );
      out.stdout.write(`${value}\n`);
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
    if (
      error instanceof ConfigError ||
      error instanceof PidLockError ||
      error instanceof CliFailure ||
      error instanceof PgliteFolderError ||
      error instanceof EmbeddedPostgresError ||
      error instanceof ImportRefusedError
    ) {
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
