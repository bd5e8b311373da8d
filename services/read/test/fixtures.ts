import { appTest } from '@herald/testkit/fixtures';
import { createApp } from '../src/app.js';
import { IndexManager } from '../src/index-manager.js';

/**
 * appTest for the read service with a read_only client. Its app gets an IndexManager (that builds
 * expression indexes, or not), whose background builds are waited for before the database goes.
 */
export function readTest(options: { db?: 'postgres' | 'embedded'; expressionIndexes: boolean }) {
  return appTest(createApp, {
    ...(options.db && { db: options.db }),
    role: 'read_only',
    deps: (deps, onCleanup) => {
      const indexes = new IndexManager(deps.db, deps.logger, options.expressionIndexes);
      onCleanup(() => indexes.idle());
      return { indexes };
    },
  });
}
