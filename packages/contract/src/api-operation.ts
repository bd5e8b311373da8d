import type { z } from 'zod';
import type { ErrorCode } from './error-codes.js';
import type { Role } from './roles.js';

/**
 * One operation of the HTTP API as the OpenAPI document (GET /openapi.json) states it, declared
 * beside its handler (or, for read's, in item-operations.ts) with the zod schemas the handler
 * validates with and answers by. Pure data: the runtime turns a list of them into the document.
 */
export interface ApiOperation {
  method: 'get' | 'post' | 'put' | 'delete';
  /** As OpenAPI writes it: `/webhooks/{id}` (express: `/webhooks/:id`). */
  path: string;
  summary: string;
  /** The section of docs/api.md: Records, Webhooks, Webhook calls, Bulk jobs, Events, Operations. */
  tag: string;
  /** More than the summary says (Markdown). */
  description?: string;
  /** Herald's, not the DatoCMS CMA's (docs/api.md, DatoCMS compatibility). */
  extension?: boolean;
  /** Who may call it: `admin` always, these roles too; `public` needs no token. */
  access: { roles: readonly Role[] } | 'public';
  /** The query string, parsed with brackets (`page[limit]`), as the handler's schema reads it. */
  query?: z.ZodObject;
  /** Request headers of Herald's own the handler reads (lower-case names). */
  headers?: z.ZodObject;
  /** A JSON body, as the handler's schema reads it. */
  body?: { schema: z.ZodType; required: boolean };
  /** What it answers on success: status → JSON schema, or no schema for an empty or non-JSON body. */
  responses: Record<
    number,
    { description: string; schema?: z.ZodType; mediaType?: string | readonly string[] }
  >;
  /** The error codes this operation adds to those every operation of its kind can give. */
  errors?: readonly ErrorCode[];
}
