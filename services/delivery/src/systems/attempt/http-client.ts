import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { Agent, request, type Dispatcher } from 'undici';
import { checkAddress, isIpAddress, type CidrList, errorMessage } from '@herald/contract';

/** A resolved or literal address in a blocked range (docs/api.md, The webhook resource). */
class BlockedAddressError extends Error {
  readonly code = 'HERALD_BLOCKED_ADDRESS';
  constructor(reason: string) {
    super(`refused to connect: ${reason}`);
    this.name = 'BlockedAddressError';
  }
}

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * A `lookup` for net.connect that resolves as usual and then refuses blocked addresses: the check
 * applies to the address actually connected to, so DNS rebinding cannot slip past it.
 */
function guardedLookup(allow: CidrList) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '');
      const allowed = addresses.filter((a) => !checkAddress(a.address, allow).blocked);
      if (allowed.length === 0) {
        const first = addresses[0];
        const reason = first ? checkAddress(first.address, allow) : undefined;
        return callback(
          new BlockedAddressError(
            reason?.blocked
              ? `${hostname} resolves to ${reason.reason}`
              : `${hostname} has no address`,
          ),
          '',
        );
      }
      if (options.all) return callback(null, allowed);
      const chosen = allowed[0]!;
      callback(null, chosen.address, chosen.family);
    });
  };
}

export interface HttpClientOptions {
  connectTimeoutMs: number;
  /** The whole call: connect, send, headers and body. */
  totalTimeoutMs: number;
  allowCidrs: CidrList;
  maxResponseBytes: number;
  /** Sockets kept per origin. */
  connectionsPerOrigin: number;
}

export type SendResult =
  | {
      kind: 'response';
      status: number;
      headers: Record<string, string>;
      body: string;
    }
  | {
      kind: 'error';
      /**
       * timeout, reset, dns, refused (connection refused), blocked (SSRF), tls (a handshake
       * refused, a certificate not trusted), auth (the OAuth2 token could not be had), error
       * (other).
       */
      error: 'timeout' | 'reset' | 'dns' | 'refused' | 'blocked' | 'tls' | 'auth' | 'error';
      reason: string;
    };

/** What a TLS connection presents and trusts beyond the defaults (PEM; mutual TLS). */
export interface TlsIdentity {
  cert?: string;
  key?: string;
  /** Replaces the system's CAs for the server's certificate. */
  ca?: string;
}

/** One undici Agent per process, shared by every delivery (keep-alive pools per origin). */
export class HttpClient {
  readonly agent: Agent;

  constructor(private readonly options: HttpClientOptions) {
    this.agent = this.createAgent({});
  }

  /**
   * An Agent with this client's SSRF lookup and timeouts, presenting `tls` on its connections
   * (the process's Agent has none; mutual TLS has one per identity: tls-dispatchers.ts).
   */
  createAgent(tls: TlsIdentity): Agent {
    const { options } = this;
    return new Agent({
      connect: {
        timeout: options.connectTimeoutMs,
        lookup: guardedLookup(options.allowCidrs),
        ...tls,
      },
      headersTimeout: options.totalTimeoutMs,
      bodyTimeout: options.totalTimeoutMs,
      connections: options.connectionsPerOrigin,
      keepAliveTimeout: 4_000,
    });
  }

  /**
   * POSTs (through `dispatcher`, default the process's Agent); never follows redirects, never
   * throws for a network failure.
   */
  async send(
    url: string,
    headers: Record<string, string>,
    body: string,
    dispatcher: Dispatcher = this.agent,
  ): Promise<SendResult> {
    let hostname: string;
    try {
      hostname = new URL(url).hostname;
    } catch {
      return { kind: 'error', error: 'error', reason: `invalid url` };
    }
    const literal = hostname.replace(/^\[(.*)\]$/, '$1');
    if (isIpAddress(literal)) {
      const check = checkAddress(literal, this.options.allowCidrs);
      if (check.blocked) return { kind: 'error', error: 'blocked', reason: check.reason };
    }
    const signal = AbortSignal.timeout(this.options.totalTimeoutMs);
    try {
      const response = await request(url, {
        method: 'POST',
        headers,
        body,
        dispatcher,
        signal,
      });
      const text = await readCapped(response.body, this.options.maxResponseBytes);
      return {
        kind: 'response',
        status: response.statusCode,
        headers: flattenHeaders(response.headers),
        body: text,
      };
    } catch (error) {
      return classifyError(error, signal.aborted);
    }
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}

/** Keeps the first maxBytes of a body; the rest is discarded (the stream is destroyed). */
async function readCapped(body: AsyncIterable<Buffer> & { destroy(): unknown }, maxBytes: number) {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const room = maxBytes - size;
    if (room > 0) {
      const kept = chunk.length > room ? chunk.subarray(0, room) : chunk;
      chunks.push(kept);
      size += kept.length;
    }
    if (size >= maxBytes) {
      body.destroy();
      break;
    }
  }
  // Postgres text cannot hold NUL.
  return Buffer.concat(chunks).toString('utf8').replaceAll('\u0000', '\uFFFD');
}

function flattenHeaders(headers: Record<string, string | string[] | undefined>) {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) flat[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return flat;
}

function errorCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; current && depth < 5; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && code !== 'UND_ERR_ABORTED') return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * Node's TLS failures: OpenSSL's alerts and errors (a client certificate refused, none sent) and
 * certificate checks (an unknown CA, a name that does not match).
 */
const TLS_CODE =
  /^(ERR_SSL_|ERR_TLS_|UNABLE_TO_|SELF_SIGNED_CERT|DEPTH_ZERO_SELF_SIGNED_CERT|CERT_|ERR_OSSL_)/;

function classifyError(error: unknown, aborted: boolean): SendResult & { kind: 'error' } {
  const message = errorMessage(error);
  const code = errorCode(error);
  if (code === 'HERALD_BLOCKED_ADDRESS' || error instanceof BlockedAddressError) {
    const blocked = findCause(error, BlockedAddressError);
    return { kind: 'error', error: 'blocked', reason: blocked?.message ?? message };
  }
  if (
    aborted ||
    code === 'UND_ERR_CONNECT_TIMEOUT' ||
    code === 'UND_ERR_HEADERS_TIMEOUT' ||
    code === 'UND_ERR_BODY_TIMEOUT' ||
    code === 'ETIMEDOUT'
  ) {
    return {
      kind: 'error',
      error: 'timeout',
      reason: `timeout (${code ?? 'total time exceeded'})`,
    };
  }
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NODATA') {
    return { kind: 'error', error: 'dns', reason: `DNS lookup failed (${code})` };
  }
  if (code === 'ECONNREFUSED')
    return { kind: 'error', error: 'refused', reason: 'connection refused' };
  if (code !== undefined && TLS_CODE.test(code)) {
    return { kind: 'error', error: 'tls', reason: `TLS handshake failed (${code}: ${message})` };
  }
  if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET' || code === 'EPIPE') {
    return { kind: 'error', error: 'reset', reason: `connection reset (${message})` };
  }
  return { kind: 'error', error: 'error', reason: message };
}

function findCause<T extends Error>(
  error: unknown,
  type: new (...args: never[]) => T,
): T | undefined {
  let current: unknown = error;
  for (let depth = 0; current && depth < 5; depth++) {
    if (current instanceof type) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}
