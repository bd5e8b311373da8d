import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect } from 'vitest';
import { serve, testDeps, type TestServer } from '@herald/testkit';
import { integrationTest } from '@herald/testkit/fixtures';
import { createApp } from '../app.js';

const it = integrationTest();

let server: TestServer;
let unbuilt: TestServer;

it.beforeAll(async ({ db, redis }) => {
  const dir = await mkdtemp(join(tmpdir(), 'herald-console-'));
  await mkdir(join(dir, 'assets'));
  await writeFile(join(dir, 'index.html'), '<!doctype html><title>Herald console</title>');
  await writeFile(join(dir, 'assets', 'index-abc123.js'), 'console.log("hi")');
  server = await serve(createApp({ ...testDeps(db, redis), consoleDir: dir }));
  unbuilt = await serve(createApp({ ...testDeps(db, redis), consoleDir: join(dir, 'missing') }));
  return async () => {
    await server.close();
    await unbuilt.close();
    await rm(dir, { recursive: true, force: true });
  };
});

describe('GET /console (the web console, public)', () => {
  it('leads / to the console', async () => {
    const res = await fetch(`${server.url}/`, { redirect: 'manual' });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('/console/');
  });

  it('redirects /console to /console/ so relative asset URLs resolve', async () => {
    const res = await fetch(`${server.url}/console`, { redirect: 'manual' });
    expect(res.status).toBe(301);
    expect(res.headers.get('location')).toBe('/console/');
  });

  it('serves index.html without a token, revalidated, with a strict CSP', async () => {
    const res = await fetch(`${server.url}/console/`, { headers: { Accept: 'text/html' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await res.text()).toContain('Herald console');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('serves hashed assets as immutable', async () => {
    const res = await fetch(`${server.url}/console/assets/index-abc123.js`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/javascript/);
    expect(res.headers.get('cache-control')).toContain('immutable');
  });

  it('answers an unknown console file with 404 in the envelope', async () => {
    const res = await fetch(`${server.url}/console/nope.js`);
    expect(res.status).toBe(404);
    const body = (await res.json()) as { data: { attributes: { code: string } }[] };
    expect(body.data[0]!.attributes.code).toBe('INVALID_ENDPOINT');
  });

  it('leaves the API behind auth', async () => {
    const res = await fetch(`${server.url}/webhooks`);
    expect(res.status).toBe(401);
  });

  it('says how to build the console when it is not built', async () => {
    const res = await fetch(`${unbuilt.url}/console/`);
    expect(res.status).toBe(404);
    const body = (await res.json()) as {
      data: { attributes: { code: string; details: { message: string } } }[];
    };
    expect(body.data[0]!.attributes.code).toBe('INVALID_ENDPOINT');
    expect(body.data[0]!.attributes.details.message).toContain('pnpm build');
  });
});
