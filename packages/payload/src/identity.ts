import { z } from 'zod';

/** Herald's version, sent as `User-Agent: Herald/<version>`. */
export const HERALD_VERSION = '0.1.0';

/** The `User-Agent` of every call (a webhook's own `User-Agent` header replaces it). */
export const HERALD_USER_AGENT = `Herald/${HERALD_VERSION}`;

/**
 * The payload's variables, read by delivery (the calls it sends) and ingest (previews of them):
 * spread `payloadEnv` into each service's config.
 */
export const payloadEnv = {
  /** `site_id` of the default payload. */
  SITE_ID: z.string().min(1).default('herald'),
};
