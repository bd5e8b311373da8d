import { loadConfig } from '@herald/ingest';
import { httpSettings, type HttpSettings } from '@herald/runtime';

/**
 * The HTTP settings a deployed Herald runs with (the defaults of the ingest service's config):
 * benchmarks measure these, not the tests' (which verify tokens on every request).
 */
export function productionHttp(): HttpSettings {
  return httpSettings(loadConfig({}));
}
