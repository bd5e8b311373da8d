import { describe, expect, it } from 'vitest';
import { createPostgresDb } from '@herald/store';
import { TEST_DATABASE_URL, TEST_REDIS_URL, silentLogger } from '@herald/testkit';
import { openCoordination, openReplicaDb } from './boot.js';
import { ConfigError, parseClusterNodes } from './config.js';
import { Lifecycle } from './shutdown.js';

describe('openReplicaDb', () => {
  it('opens nothing without READ_DATABASE_URL', async () => {
    const db = createPostgresDb({ connectionString: TEST_DATABASE_URL, maxConnections: 1 });
    try {
      expect(openReplicaDb({ DB_POOL_SIZE: 2 }, 'herald-test-replica')).toBeUndefined();
    } finally {
      await db.close();
    }
  });

  it('opens a pool on READ_DATABASE_URL, named, with the statement budget given', async () => {
    const db = createPostgresDb({ connectionString: TEST_DATABASE_URL, maxConnections: 1 });
    const config = { READ_DATABASE_URL: TEST_DATABASE_URL, DB_POOL_SIZE: 2 };
    const replica = openReplicaDb(config, 'herald-test-replica', 1234)!;
    try {
      const { rows } = await replica.query<{ name: string; timeout: string }>(
        `SELECT current_setting('application_name') AS name,
                current_setting('statement_timeout') AS timeout`,
      );
      expect(rows[0]).toEqual({ name: 'herald-test-replica', timeout: '1234ms' });
    } finally {
      await replica.close();
      await db.close();
    }
  });
});

describe('openCoordination', () => {
  it('refuses REDIS_URL and REDIS_CLUSTER_NODES together, naming both', () => {
    const db = createPostgresDb({ connectionString: TEST_DATABASE_URL, maxConnections: 1 });
    const logger = silentLogger();
    const config = {
      REDIS_URL: TEST_REDIS_URL,
      REDIS_CLUSTER_NODES: parseClusterNodes('127.0.0.1:7000'),
      REDIS_PREFIX: 'herald',
      MIGRATE_ON_START: false,
    };
    expect(() => openCoordination(config, db, logger, new Lifecycle(logger))).toThrow(ConfigError);
    expect(() => openCoordination(config, db, logger, new Lifecycle(logger))).toThrow(
      /REDIS_CLUSTER_NODES: set, and REDIS_URL too/,
    );
    return db.close();
  });
});
