import { lookup } from 'node:dns/promises';
import {
  checkAddress,
  errorMessage,
  type BrokerDestination,
  type CidrList,
} from '@herald/contract';
import type { SendResult } from '../http-client.js';

/**
 * One message of an attempt, as every broker kind carries it: the call's body, and its headers
 * (the Standard Webhooks `webhook-id`, `webhook-timestamp`, `webhook-signature` among them) as
 * the broker's message headers, so a consumer verifies it as an HTTP receiver does.
 */
export interface BrokerMessage {
  /** The call's id (the `webhook-id` header): the message id where the broker has one. */
  id: string;
  body: string;
  headers: Record<string, string>;
}

/**
 * A connection to one broker (one URL and credentials), publishing to any of the destinations
 * that share it. publish never throws: the broker's acknowledgement is a 200 `response` whose
 * body says what the broker answered; anything else is an `error` with a reason a person reads.
 */
export interface Publisher {
  publish(
    destination: BrokerDestination,
    message: BrokerMessage,
    signal: AbortSignal,
  ): Promise<SendResult>;
  /** Whether the connection is still usable (a closed one is replaced). */
  readonly open: boolean;
  close(): Promise<void>;
}

export interface PublisherOptions {
  connectTimeoutMs: number;
  allowCidrs: CidrList;
}

/** A failed attempt's result. */
export const failed = (
  error: Extract<SendResult, { kind: 'error' }>['error'],
  reason: string,
): SendResult => ({ kind: 'error', error, reason });

/** An acknowledged publish: the destination's 2xx, with the broker's answer in words. */
export const acknowledged = (answer: string, fields: Record<string, string>): SendResult => ({
  kind: 'response',
  status: 200,
  headers: fields,
  body: answer,
});

/** Thrown by a publisher's connect: already classified. */
export class BrokerError extends Error {
  constructor(
    readonly result: Extract<SendResult, { kind: 'error' }>,
    options?: { cause?: unknown },
  ) {
    super(result.reason, options);
    this.name = 'BrokerError';
  }
}

/**
 * Refuses a broker whose host resolves only to blocked addresses (the SSRF guard, as for HTTP
 * endpoints). Checked when a connection is opened; a name that does not resolve is a `dns` error.
 */
export async function guardBrokerAddress(url: string, allow: CidrList): Promise<void> {
  const host = new URL(url).hostname.replace(/^\[(.*)\]$/, '$1');
  let addresses: { address: string }[];
  try {
    addresses = await lookup(host, { all: true });
  } catch (error) {
    throw new BrokerError(
      { kind: 'error', error: 'dns', reason: `the broker's host ${host} does not resolve` },
      { cause: error },
    );
  }
  const checks = addresses.map((a) => checkAddress(a.address, allow));
  if (checks.length > 0 && checks.every((c) => c.blocked)) {
    const first = checks[0];
    const reason = first?.blocked ? first.reason : 'a blocked address';
    throw new BrokerError({
      kind: 'error',
      error: 'blocked',
      reason: `refused to connect: ${host} resolves to ${reason}`,
    });
  }
}

/** The error code of an error or its causes (ECONNREFUSED…). */
export function errorCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; current && depth < 5; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * A network failure in words, or undefined when the error is not one (the publisher words it).
 * `broker`: the broker's name, as the reason says it ("RabbitMQ at 10.0.0.5:5672").
 */
export function networkFailure(error: unknown, broker: string): SendResult | undefined {
  if (error instanceof BrokerError) return error.result;
  const code = errorCode(error) ?? '';
  switch (code) {
    case 'ECONNREFUSED':
      return failed('refused', `${broker} is unreachable: connection refused`);
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return failed('dns', `${broker} is unreachable: its host does not resolve (${code})`);
    case 'ECONNRESET':
    case 'EPIPE':
      return failed('reset', `${broker} closed the connection (${code})`);
    case 'ETIMEDOUT':
      return failed('timeout', `${broker} did not answer in time (connect timeout)`);
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return failed('refused', `${broker} is unreachable (${code})`);
    default:
      return undefined;
  }
}

/** `promise`, or a timeout result once `signal` aborts (the promise is left to settle). */
export function withTimeout(
  promise: Promise<SendResult>,
  signal: AbortSignal,
  reason: string,
): Promise<SendResult> {
  if (signal.aborted) return Promise.resolve(failed('timeout', reason));
  return new Promise((resolve) => {
    const onAbort = () => resolve(failed('timeout', reason));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (result) => {
        signal.removeEventListener('abort', onAbort);
        resolve(result);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        resolve(failed('error', errorMessage(error)));
      },
    );
  });
}

/** The host:port a reason names (never the credentials). */
export function brokerHost(url: string): string {
  const parsed = new URL(url);
  return parsed.port ? `${parsed.hostname}:${parsed.port}` : parsed.hostname;
}

/** The credentials of a destination: its fields, or else its URL's user info (decoded). */
export function credentialsOf(destination: BrokerDestination): {
  username: string | null;
  password: string | null;
} {
  const url = new URL(destination.url);
  const decode = (value: string) => (value === '' ? null : decodeURIComponent(value));
  return {
    username: destination.username ?? decode(url.username),
    password: destination.password ?? decode(url.password),
  };
}
