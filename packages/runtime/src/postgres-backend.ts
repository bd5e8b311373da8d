import type { EventEmitter } from 'node:events';
import pg from 'pg';
import {
  PostgresConnection,
  PostgresQueueBackend,
  type BackendFactory,
  type PostgresConnectionOptions,
} from 'bullmq';

/**
 * BullMQ 6.7's PostgreSQL connection remembers its first readiness check, a failed one too: a
 * queue made before its schema was migrated, or while Postgres was away (Herald's services listen
 * before their database answers), refused every job for the rest of the process's life ("schema …
 * is not initialized"), and its events waited for the sweeper. This one forgets a failed check,
 * so that the next use checks again.
 */
export class RecheckingPostgresConnection extends PostgresConnection {
  constructor(options: PostgresConnectionOptions) {
    super(options);
    // node-postgres leaves a client that is checked out of its pool without an 'error' listener:
    // a connection dropped between two of BullMQ's statements (a backend terminated, a restart)
    // emitted 'error' with nobody listening and ended the process. Every client gets a listener
    // for its life; the statement that next uses it fails, as a dropped connection should.
    (this.pool as unknown as EventEmitter).on('connect', (client: EventEmitter) => {
      client.on('error', () => undefined);
    });
    // The worker's LISTEN client is a pg.Client of its own, which BullMQ listens to only once
    // connect() has resolved: a backend terminated in between (an error message in the same read
    // as the handshake's end) had nobody listening. This one listens from its construction.
    const self = this as unknown as { pgModule?: typeof pg };
    if (self.pgModule) self.pgModule = { ...self.pgModule, Client: ListeningClient };
  }

  override async waitUntilReady(): Promise<void> {
    try {
      await super.waitUntilReady();
    } catch (error) {
      forgetReadiness(this);
      throw error;
    }
  }
}

/** A pg.Client with an 'error' listener for its whole life (its owner adds its own). */
class ListeningClient extends pg.Client {
  constructor(config?: string | pg.ClientConfig) {
    super(config);
    this.on('error', () => undefined);
  }
}

/** Drops a memoized readiness promise (a private field of BullMQ's classes, pinned 6.7.0). */
function forgetReadiness(target: object): void {
  (target as { readyPromise?: Promise<void> }).readyPromise = undefined;
}

/**
 * createPostgresBackend of BullMQ (the same connection naming), on a connection, and a backend,
 * that check their readiness again after a failure.
 */
export const createPostgresQueueBackend: BackendFactory<
  PostgresQueueBackend,
  PostgresConnectionOptions
> = (name, opts, factoryOpts = {}) => {
  const connection = new RecheckingPostgresConnection(opts.connection);
  // A worker's LISTEN connection is named as BullMQ names it, so that getWorkers finds it.
  const workerName = (opts as { name?: string }).name;
  const listenClientName = factoryOpts.withBlockingConnection
    ? `${name}${workerName ? `:w:${workerName}` : ''}`
    : factoryOpts.blocking
      ? `${name}:qe`
      : undefined;
  const backend = new PostgresQueueBackend(connection, name, opts, true, listenClientName);
  const ready = backend.waitUntilReady.bind(backend);
  backend.waitUntilReady = async () => {
    try {
      await ready();
    } catch (error) {
      forgetReadiness(backend);
      throw error;
    }
  };
  return backend;
};
