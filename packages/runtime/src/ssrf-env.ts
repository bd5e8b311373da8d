import { z } from 'zod';
import { parseCidrList } from '@herald/contract';

/**
 * The SSRF allow-list (docs/api.md, The webhook resource), read by ingest (webhook URLs at
 * creation) and delivery (every resolved address at connect time): spread `ssrfEnv` into each
 * service's config.
 */
export const ssrfEnv = {
  /**
   * CIDRs (comma- or space-separated) exempt from the blocked address ranges. Default none; for
   * local development and tests use "127.0.0.0/8,::1/128". "none" says none explicitly (the
   * single process's embedded default allows loopback unless told otherwise).
   */
  SSRF_ALLOW_CIDRS: z
    .string()
    .default('')
    .transform((value, ctx) => {
      try {
        return value.trim() === 'none' ? [] : parseCidrList(value);
      } catch (error) {
        ctx.addIssue({ code: 'custom', message: (error as Error).message });
        return z.NEVER;
      }
    }),
};
