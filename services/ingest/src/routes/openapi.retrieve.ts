import { Router } from 'express';
import { z } from 'zod';
import type { ApiOperation, OpenApiDocument } from '@herald/runtime';

export const openApiOperation: ApiOperation = {
  method: 'get',
  path: '/openapi.json',
  summary: 'This document: the HTTP API in OpenAPI 3.1',
  description: 'Generated from the zod schemas the routes validate with and answer by.',
  tag: 'Operations',
  extension: true,
  access: 'public',
  responses: {
    200: {
      description: 'The OpenAPI document',
      schema: z.looseObject({ openapi: z.string().startsWith('3.1.'), paths: z.looseObject({}) }),
    },
  },
};

/**
 * GET /openapi.json: the document of the whole API, read's routes included (the gateway sends
 * everything but /items here), the same in the split stack and the single process. Public, like
 * the console that renders it: it holds no data.
 */
export function openApiRouter(document: OpenApiDocument): Router {
  const router = Router();
  const body = JSON.stringify(document);
  router.get('/openapi.json', (_req, res) => {
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    res.setHeader('Cache-Control', 'no-cache');
    res.send(body);
  });
  return router;
}
