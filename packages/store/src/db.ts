import pg from 'pg';

export type Row = Record<string, unknown>;

export interface QueryResult<R extends Row = Row> {
  rows: R[];
  rowCount: number;
}

/**
 * A statement run on a hot path, by name: with `pg` it is prepared once per connection, so later
 * runs skip parsing and (once Postgres settles on a generic plan) planning, which cost more than
 * the work itself for a small statement (measured: a one-event ingest statement, 1,180 → 400 µs
 * of backend CPU). Only for fixed texts: every distinct name stays prepared on each connection.
 */
export interface NamedStatement {
  name: string;
  text: string;
  /**
   * Planned once per connection: on a pool with a plan-once share (PostgresOptions.planOncePoolSize)
   * it runs there, where `plan_cache_mode = force_generic_plan`. For hot statements whose plans
   * for a few ids look cheaper than their generic plan, so that Postgres would plan them again at
   * every execution (issue #16: 230–810 µs of planning per event in the delivery workers), and
   * whose generic plan is as good. Elsewhere (another pool, a transaction, PGlite) it runs as any
   * statement.
   */
  planOnce?: boolean;
}

/** Something that runs parameterized SQL: the database itself or an open transaction. */
export interface Queryable {
  query<R extends Row = Row>(
    statement: string | NamedStatement,
    params?: readonly unknown[],
  ): Promise<QueryResult<R>>;
}

const textOf = (statement: string | NamedStatement): string =>
  typeof statement === 'string' ? statement : statement.text;

/**
 * The one SQL code path (docs/architecture.md, One SQL code path): PostgreSQL through `pg` (a
 * server of the deployment's, or the single process's embedded one). PGlite (Postgres compiled to
 * WASM, in process), the embedded database before #29, remains only to read an earlier Herald's
 * folder (`herald import-pglite`) and as bench:embedded's baseline. Same SQL, same migrations.
 */
export interface Db extends Queryable {
  readonly kind: 'postgres' | 'pglite';
  /** Runs fn in one transaction; commits when it resolves, rolls back when it throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  /** Runs a script of several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
  /**
   * Runs a script of statements without parameters in one round trip, on one connection, and
   * returns each statement's result in order. A script that opens a transaction and fails inside
   * it has the transaction rolled back before the connection is used again.
   */
  script<R extends Row = Row>(sql: string): Promise<QueryResult<R>[]>;
  close(): Promise<void>;
}

export interface PostgresOptions {
  connectionString: string;
  /** Pool size per process. */
  maxConnections?: number;
  /** Tables are created and read in this schema first (tests isolate themselves with it). */
  searchPath?: string;
  applicationName?: string;
  /**
   * false: commits return before their WAL is flushed (`synchronous_commit = off`). A Postgres
   * crash may then forget the last ~0.6 s of commits, never corrupt anything. Only for writers
   * whose lost commit is redone (the delivery workers: a forgotten match or attempt is re-swept and
   * re-sent, at least once); never for POST /events, whose 202 promises durability.
   */
  synchronousCommit?: boolean;
  /**
   * Connections of a second pool, for the NamedStatements marked `planOnce`: the same server
   * settings plus `plan_cache_mode = force_generic_plan`, `enable_seqscan = off` and `jit = off`. Undefined or 0: none (they run on the
   * pool). The process then holds up to maxConnections + planOncePoolSize connections.
   */
  planOncePoolSize?: number;
  /**
   * Postgres cancels any statement of this pool that runs longer (SQLSTATE 57014). Sent as the
   * `statement_timeout` startup parameter, so it costs no round trip; unlike pg's `query_timeout`
   * (which only stops waiting) it frees the backend. Undefined or 0: no limit.
   */
  statementTimeoutMs?: number;
}

// int8 and numeric stay strings (ids are decimal strings on the wire); the same parsers are set
// for PGlite so both engines hand back the same JS values.
const INT8_OID = 20;
const NUMERIC_OID = 1700;

function serverOptions(options: PostgresOptions, planOnce = false): string {
  return [
    options.searchPath ? `-c search_path=${options.searchPath}` : '',
    options.synchronousCommit === false ? '-c synchronous_commit=off' : '',
    // Its statements are probes by key. A generic plan made while a table was nearly empty (a
    // new month's partition, a new install) would scan it, until autovacuum's next ANALYZE.
    // enable_seqscan=off prices a scan it cannot avoid (a one-row table) at 10^10, past
    // jit_above_cost: on a server built with LLVM, each run of such a statement compiled itself
    // first (events.find-to-match: 255 ms of a backend's CPU for a 0.1 ms probe). No probe by key
    // gains from JIT.
    planOnce ? '-c plan_cache_mode=force_generic_plan -c enable_seqscan=off -c jit=off' : '',
  ]
    .filter(Boolean)
    .join(' ');
}

export function createPostgresDb(options: PostgresOptions): Db {
  const openPool = (max: number, planOnce: boolean) => {
    const opened = new pg.Pool({
      connectionString: options.connectionString,
      max,
      application_name: options.applicationName ?? 'herald',
      connectionTimeoutMillis: 5_000,
      ...(serverOptions(options, planOnce) ? { options: serverOptions(options, planOnce) } : {}),
      ...(options.statementTimeoutMs ? { statement_timeout: options.statementTimeoutMs } : {}),
    });
    // An idle client's connection dropping (server restart) must not crash the process.
    opened.on('error', () => undefined);
    // Nor a checked-out one's before its user listens: the pool hands a new client over from
    // inside the read that ends its handshake, and an error in the same read (a backend
    // terminated as it opened) was emitted with nobody listening. The statement that next uses
    // the client fails as unavailable instead.
    opened.on('connect', (client) => client.on('error', () => undefined));
    return opened;
  };
  const pool = openPool(options.maxConnections ?? 10, false);
  const planOncePool = options.planOncePoolSize ? openPool(options.planOncePoolSize, true) : null;

  const query = async <R extends Row>(
    client: pg.Pool | pg.PoolClient,
    statement: string | NamedStatement,
    params?: readonly unknown[],
  ): Promise<QueryResult<R>> => {
    const values = params as unknown[] | undefined;
    const result =
      typeof statement === 'string'
        ? await client.query<R>(statement, values)
        : await client.query<R>({ name: statement.name, text: statement.text, values });
    return { rows: result.rows, rowCount: result.rowCount ?? 0 };
  };

  /**
   * Runs `work` on one client of the pool; if it throws, rolls back whatever transaction it left
   * open before the client goes back.
   */
  const onOneClient = async <T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> => {
    const client = await pool.connect();
    // The pool listens for errors on idle clients only. A checked-out client whose connection
    // drops (backend terminated, server restart) emits 'error', which would crash the process
    // with no listener: this one records it, and the work fails as unavailable instead.
    let lost: Error | undefined;
    const onError = (error: Error) => {
      lost ??= error;
    };
    client.on('error', onError);
    let broken: Error | undefined;
    try {
      return await work(client);
    } catch (error) {
      try {
        await client.query('ROLLBACK');
      } catch (rollbackError) {
        broken = rollbackError as Error;
      }
      // The work may have wrapped the query error in its own: the lost connection is what
      // happened.
      throw lost && !isDbUnavailableError(error) ? lost : error;
    } finally {
      broken ??= lost;
      // A broken client is discarded by the pool; it keeps the listener, as it may still emit
      // (the socket's end follows the server's error message). A healthy one goes back clean.
      if (!broken) client.off('error', onError);
      client.release(broken);
    }
  };

  return {
    kind: 'postgres',
    query: (statement, params) =>
      query(
        planOncePool && typeof statement !== 'string' && statement.planOnce ? planOncePool : pool,
        statement,
        params,
      ),
    transaction: (fn) =>
      onOneClient(async (client) => {
        await client.query('BEGIN');
        const result = await fn({ query: (text, params) => query(client, text, params) });
        await client.query('COMMIT');
        return result;
      }),
    script: <R extends Row>(sql: string) =>
      onOneClient(async (client) => {
        // pg answers a script of one statement with one result, of several with a list.
        const results = (await client.query<R>(sql)) as pg.QueryResult<R> | pg.QueryResult<R>[];
        return (Array.isArray(results) ? results : [results]).map((result) => ({
          rows: result.rows,
          rowCount: result.rowCount ?? 0,
        }));
      }),
    async exec(sql) {
      await pool.query(sql);
    },
    async close() {
      await Promise.all([pool.end(), planOncePool?.end()]);
    },
  };
}

export interface PgliteOptions {
  /** Folder that holds the data; undefined keeps everything in memory. */
  dataDir?: string;
}

export async function createPgliteDb(options: PgliteOptions = {}): Promise<Db> {
  // Loaded on demand: the WASM build is only paid for by the import and the benchmark.
  const { PGlite } = await import('@electric-sql/pglite');
  const parsers = { [INT8_OID]: (value: string) => value, [NUMERIC_OID]: (value: string) => value };
  const pglite = await PGlite.create({
    ...(options.dataDir ? { dataDir: options.dataDir } : {}),
    parsers,
  });
  const normalize = <R extends Row>(result: {
    rows: unknown[];
    affectedRows?: number;
  }): QueryResult<R> => ({
    rows: result.rows as R[],
    // PGlite reports affectedRows 0 for a SELECT; pg's rowCount is the number of rows.
    rowCount: result.rows.length > 0 ? result.rows.length : (result.affectedRows ?? 0),
  });
  return {
    kind: 'pglite',
    async query<R extends Row>(statement: string | NamedStatement, params?: readonly unknown[]) {
      return normalize<R>(await pglite.query(textOf(statement), params as unknown[] | undefined));
    },
    transaction(fn) {
      return pglite.transaction((tx) =>
        fn({
          async query<R extends Row>(
            statement: string | NamedStatement,
            params?: readonly unknown[],
          ) {
            return normalize<R>(await tx.query(textOf(statement), params as unknown[] | undefined));
          },
        }),
      );
    },
    async exec(sql) {
      await pglite.exec(sql);
    },
    async script<R extends Row>(sql: string) {
      try {
        return (await pglite.exec(sql)).map((result) => normalize<R>(result));
      } catch (error) {
        await pglite.exec('ROLLBACK').catch(() => undefined);
        throw error;
      }
    },
    async close() {
      await pglite.close();
    },
  };
}

const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '53300', // too_many_connections
  '08000',
  '08003',
  '08006',
  '08001',
  '08004',
]);

/** True when the error means the database cannot be reached now (a retry may succeed). */
export function isDbUnavailableError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && UNAVAILABLE_CODES.has(code)) return true;
  return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(
    error.message,
  );
}

/** True when Postgres cancelled the statement for running past its statement_timeout. */
export function isStatementTimeoutError(error: unknown): boolean {
  return (
    sqlState(error) === '57014' &&
    error instanceof Error &&
    /statement timeout/i.test(error.message)
  );
}

/** SQLSTATE of a database error, if it is one. */
export function sqlState(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}
