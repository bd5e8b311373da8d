import { X509Certificate, createPrivateKey, type KeyObject } from 'node:crypto';
import { z } from 'zod';
import {
  ApiError,
  OAUTH2_CLIENT_AUTHS,
  WEBHOOK_AUTH_KINDS,
  checkAddress,
  isObject,
  type CidrList,
  type ErrorEntry,
  type WebhookAuth,
  type WebhookTls,
} from '@herald/contract';
import type { WebhookInput, WebhookRecord } from '@herald/store';
import { report } from '../validation/zod-errors.js';
import { literalHost } from './hosts.js';

/**
 * Endpoint authentication (docs/api.md, Endpoint authentication): a webhook's `auth` (OAuth2
 * client credentials) and `tls` (mutual TLS), checked when they are stored. A PEM that does not
 * parse, a key that is not the certificate's, a token URL that is not http(s) are each a 422
 * naming the field. The secrets (`auth.client_secret`, `tls.client_key`) are write-only: an update
 * may leave them out to keep the stored ones (withStoredSecrets), as long as what they belong to
 * (the token URL and client id, the certificate) stays the same.
 */

const LIMITS = { textChars: 2048, pemChars: 64 * 1024 } as const;

/** `auth` as validated: the secret absent when an update keeps the stored one. */
export type AuthInput = Omit<WebhookAuth, 'client_secret'> & { client_secret?: string };
/** `tls` as validated: the key absent when an update keeps the stored one. */
export type TlsInput = Omit<WebhookTls, 'client_key'> & { client_key?: string | null };

const AUTH_KEYS = [
  'kind',
  'token_url',
  'client_id',
  'client_secret',
  'client_auth',
  'scope',
  'audience',
] as const;
const TLS_KEYS = ['client_certificate', 'client_key', 'ca_certificate'] as const;

type Ctx = z.RefinementCtx;

/** An object, or null for none (OpenAPI: ['object', 'null']); anything else is `error`. */
const objectOrNull = (error: string) =>
  z
    .custom<Record<string, unknown> | null>((value) => value === null || isObject(value), {
      error,
      params: { code: 'VALIDATION_TYPE' },
      abort: true,
    })
    .meta({ type: ['object', 'null'] });

function unknownKeys(
  ctx: Ctx,
  value: Record<string, unknown>,
  keys: readonly string[],
  in_: string,
) {
  for (const key of Object.keys(value)) {
    if (!keys.includes(key)) {
      report(ctx, 'VALIDATION_FORMAT', `${in_} has no key "${key}"; its keys: ${keys.join(', ')}`, [
        key,
      ]);
    }
  }
}

/** A non-blank string of at most `max` characters at `path`; reports and answers false if not. */
function text(ctx: Ctx, value: unknown, path: string, max: number, optional = false): boolean {
  if ((value === undefined || value === null) && optional) return true;
  const key = path.split('.').at(-1)!;
  if (value === undefined || value === null || value === '') {
    report(ctx, 'VALIDATION_REQUIRED', `${path} is required`, [key]);
    return false;
  }
  if (typeof value !== 'string') {
    report(ctx, 'VALIDATION_TYPE', `${path} must be a string${optional ? ' or null' : ''}`, [key]);
    return false;
  }
  if (value.length > max) {
    report(ctx, 'VALIDATION_LENGTH', `${path} must be at most ${max} characters`, [key]);
    return false;
  }
  return true;
}

function tokenUrlProblem(value: string, allowCidrs: CidrList): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'auth.token_url must be an absolute http:// or https:// URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return 'auth.token_url must use http or https';
  }
  if (url.username || url.password) {
    return 'auth.token_url must not hold credentials (client_id and client_secret are sent)';
  }
  const host = literalHost(url.hostname);
  const address = host === undefined ? undefined : checkAddress(host, allowCidrs);
  return address?.blocked
    ? `auth.token_url points to a refused address: ${address.reason}`
    : undefined;
}

/** `auth`: OAuth2 client credentials, or null for none. */
export const endpointAuth = (allowCidrs: CidrList) =>
  objectOrNull('auth must be an object {"kind": "oauth2_client_credentials", …} or null')
    .superRefine((auth, ctx) => {
      if (auth === null) return;
      unknownKeys(ctx, auth, AUTH_KEYS, 'auth');
      const kind = auth['kind'];
      if (!(WEBHOOK_AUTH_KINDS as readonly unknown[]).includes(kind)) {
        const code = kind === undefined ? 'VALIDATION_REQUIRED' : 'VALIDATION_INCLUSION';
        report(ctx, code, `auth.kind must be one of: ${WEBHOOK_AUTH_KINDS.join(', ')}`, ['kind']);
      }
      if (text(ctx, auth['token_url'], 'auth.token_url', LIMITS.textChars)) {
        const problem = tokenUrlProblem(auth['token_url'] as string, allowCidrs);
        if (problem) report(ctx, 'VALIDATION_FORMAT', problem, ['token_url']);
      }
      text(ctx, auth['client_id'], 'auth.client_id', LIMITS.textChars);
      // Absent: an update keeps the stored secret (withStoredSecrets); a create requires it.
      if (auth['client_secret'] !== undefined) {
        text(ctx, auth['client_secret'], 'auth.client_secret', LIMITS.textChars);
      }
      const clientAuth = auth['client_auth'];
      if (
        clientAuth !== undefined &&
        clientAuth !== null &&
        !(OAUTH2_CLIENT_AUTHS as readonly unknown[]).includes(clientAuth)
      ) {
        report(
          ctx,
          'VALIDATION_INCLUSION',
          `auth.client_auth must be one of: ${OAUTH2_CLIENT_AUTHS.join(', ')} (absent: basic)`,
          ['client_auth'],
        );
      }
      text(ctx, auth['scope'], 'auth.scope', LIMITS.textChars, true);
      text(ctx, auth['audience'], 'auth.audience', LIMITS.textChars, true);
    })
    .transform((auth): AuthInput | null => {
      if (auth === null) return null;
      const secret = auth['client_secret'] as string | undefined;
      return {
        kind: auth['kind'] as AuthInput['kind'],
        token_url: auth['token_url'] as string,
        client_id: auth['client_id'] as string,
        ...(secret !== undefined && { client_secret: secret }),
        client_auth: (auth['client_auth'] as AuthInput['client_auth'] | null) ?? 'basic',
        scope: (auth['scope'] as string | null | undefined) ?? null,
        audience: (auth['audience'] as string | null | undefined) ?? null,
      };
    });

const CERTIFICATE_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

/** The certificates of a PEM bundle (at least one), or what is wrong with it. */
function parseCertificates(pem: string, path: string): X509Certificate[] | string {
  const blocks = pem.match(CERTIFICATE_BLOCK) ?? [];
  if (blocks.length === 0)
    return `${path} must hold a PEM certificate (-----BEGIN CERTIFICATE-----)`;
  const certificates: X509Certificate[] = [];
  for (const [index, block] of blocks.entries()) {
    try {
      certificates.push(new X509Certificate(block));
    } catch {
      const which = blocks.length > 1 ? ` (certificate ${index + 1})` : '';
      return `${path} does not parse as a PEM certificate${which}`;
    }
  }
  return certificates;
}

function parseKey(pem: string): KeyObject | string {
  if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(pem)) {
    return 'tls.client_key must hold a PEM private key (-----BEGIN PRIVATE KEY-----)';
  }
  try {
    return createPrivateKey({ key: pem, format: 'pem' });
  } catch {
    return 'tls.client_key does not parse as an unencrypted PEM private key';
  }
}

/** A PEM text at `tls.<key>`: a string of at most 64 KB, or null where allowed. */
function pemText(ctx: Ctx, value: unknown, key: string): value is string {
  if (value === undefined || value === null) return false;
  if (typeof value !== 'string') {
    report(ctx, 'VALIDATION_TYPE', `tls.${key} must be a PEM string or null`, [key]);
    return false;
  }
  if (value.length > LIMITS.pemChars) {
    report(ctx, 'VALIDATION_LENGTH', `tls.${key} must be at most 64 KB`, [key]);
    return false;
  }
  return true;
}

/** `tls`: a client certificate and key, and/or a CA bundle for the endpoint; or null for none. */
export const endpointTls = objectOrNull(
  'tls must be an object {"client_certificate": …, "client_key": …} or null',
)
  .superRefine((tls, ctx) => {
    if (tls === null) return;
    unknownKeys(ctx, tls, TLS_KEYS, 'tls');
    const certificate = tls['client_certificate'];
    const key = tls['client_key'];
    const ca = tls['ca_certificate'];
    let parsedCertificate: X509Certificate | undefined;
    let parsedKey: KeyObject | undefined;
    if (pemText(ctx, certificate, 'client_certificate')) {
      const parsed = parseCertificates(certificate, 'tls.client_certificate');
      if (typeof parsed === 'string')
        report(ctx, 'VALIDATION_FORMAT', parsed, ['client_certificate']);
      else parsedCertificate = parsed[0];
    }
    if (pemText(ctx, key, 'client_key')) {
      const parsed = parseKey(key);
      if (typeof parsed === 'string') report(ctx, 'VALIDATION_FORMAT', parsed, ['client_key']);
      else parsedKey = parsed;
    }
    if (pemText(ctx, ca, 'ca_certificate')) {
      const parsed = parseCertificates(ca, 'tls.ca_certificate');
      if (typeof parsed === 'string') report(ctx, 'VALIDATION_FORMAT', parsed, ['ca_certificate']);
    }
    const hasCertificate = certificate !== undefined && certificate !== null;
    if (!hasCertificate && key !== undefined && key !== null) {
      report(ctx, 'VALIDATION_REQUIRED', 'tls.client_certificate is required with tls.client_key', [
        'client_certificate',
      ]);
    }
    if (!hasCertificate && (ca === undefined || ca === null)) {
      report(
        ctx,
        'VALIDATION_REQUIRED',
        'tls needs client_certificate and client_key, or ca_certificate (null for no TLS settings)',
        ['client_certificate'],
      );
    }
    if (parsedCertificate && parsedKey && !parsedCertificate.checkPrivateKey(parsedKey)) {
      report(
        ctx,
        'VALIDATION_FORMAT',
        'tls.client_key is not the private key of tls.client_certificate',
        ['client_key'],
      );
    }
  })
  .transform((tls): TlsInput | null => {
    if (tls === null) return null;
    const key = tls['client_key'] as string | null | undefined;
    return {
      client_certificate: (tls['client_certificate'] as string | null | undefined) ?? null,
      // Absent with a certificate: an update keeps the stored key (withStoredSecrets).
      ...(key !== undefined && { client_key: key }),
      ca_certificate: (tls['ca_certificate'] as string | null | undefined) ?? null,
    };
  });

/**
 * Fills the write-only secrets an `auth` or `tls` left out from what is stored (`stored`: null on
 * a create), or names what is missing: a secret is kept only for the same token URL and client id,
 * a key only for the same certificate.
 */
export function withStoredSecrets(
  value: Partial<WebhookInput>,
  stored: Pick<WebhookRecord, 'auth' | 'tls'> | null,
): { ok: true; value: Partial<WebhookInput> } | { ok: false; errors: ErrorEntry[] } {
  const errors: ErrorEntry[] = [];
  const completed = { ...value };
  const auth = value.auth as AuthInput | null | undefined;
  if (auth && auth.client_secret === undefined) {
    const kept =
      stored?.auth &&
      stored.auth.token_url === auth.token_url &&
      stored.auth.client_id === auth.client_id
        ? stored.auth.client_secret
        : undefined;
    if (kept === undefined) {
      errors.push(
        ApiError.field(
          'auth.client_secret',
          'VALIDATION_REQUIRED',
          stored?.auth
            ? 'auth.client_secret is required when token_url or client_id changes'
            : 'auth.client_secret is required',
        ),
      );
    } else {
      completed.auth = { ...auth, client_secret: kept };
    }
  }
  const tls = value.tls as TlsInput | null | undefined;
  if (tls && tls.client_key === undefined) {
    if (tls.client_certificate === null) {
      completed.tls = { ...tls, client_key: null };
    } else if (
      stored?.tls?.client_key &&
      stored.tls.client_certificate === tls.client_certificate
    ) {
      completed.tls = { ...tls, client_key: stored.tls.client_key };
    } else {
      errors.push(
        ApiError.field(
          'tls.client_key',
          'VALIDATION_REQUIRED',
          stored?.tls?.client_certificate
            ? 'tls.client_key is required when client_certificate changes'
            : 'tls.client_key is required with tls.client_certificate',
        ),
      );
    }
  }
  return errors.length > 0 ? { ok: false, errors } : { ok: true, value: completed };
}
