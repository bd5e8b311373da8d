import type { ChainableCommander } from 'ioredis';
import { isCluster, type RedisClient } from './redis.js';

// Herald's keys on a Redis Cluster: a cluster runs a script, a MULTI or a pipeline only when all
// of its keys are on one node (a script or MULTI: in one slot). Keys that go together share a
// {hash tag}; commands on keys of several slots go one by one.

/**
 * A key of one webhook's state, `<prefix>:<name>:{<webhookId>}`: the hash tag (the id in braces)
 * puts all of one webhook's keys in one slot, so that a script reading several of them runs on
 * a cluster, while the webhooks spread over its slots and nodes. REDIS_PREFIX has no braces.
 */
export const webhookKey = (prefix: string, name: string, webhookId: string): string =>
  `${prefix}:${name}:{${webhookId}}`;

/** The part of a key a cluster hashes: its first non-empty {hash tag}, else all of it. */
function hashedPart(key: string): string {
  const open = key.indexOf('{');
  if (open < 0) return key;
  const close = key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : key;
}

/**
 * Sends one command per item (on the key `keyOf(item)`) in one round trip: a pipeline on one
 * server. On a cluster, whose pipelines must keep to one node, one pipeline per slot (the items
 * whose keys hash alike), all at once: the commands of one key keep their order (the first asker
 * of a webhook's slot is the first served). Replies in the items' order, as a pipeline's.
 */
export async function sendEach<T>(
  redis: RedisClient,
  items: readonly T[],
  keyOf: (item: T) => string,
  send: (client: ChainableCommander, item: T) => unknown,
): Promise<[Error | null, unknown][]> {
  if (items.length === 0) return [];
  const groups = new Map<string, number[]>();
  for (const [index, item] of items.entries()) {
    const group = isCluster(redis) ? hashedPart(keyOf(item)) : '';
    const indexes = groups.get(group);
    if (indexes) indexes.push(index);
    else groups.set(group, [index]);
  }
  const replies: [Error | null, unknown][] = items.map(() => [new Error('no reply'), undefined]);
  await Promise.all(
    [...groups.values()].map(async (indexes) => {
      const pipeline = redis.pipeline();
      for (const index of indexes) send(pipeline, items[index]!);
      const results = (await pipeline.exec()) ?? [];
      for (const [i, index] of indexes.entries()) {
        replies[index] = results[i] ?? [new Error('no reply'), undefined];
      }
    }),
  );
  return replies;
}
