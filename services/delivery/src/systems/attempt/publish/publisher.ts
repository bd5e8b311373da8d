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
    /** When the whole publish (connect included) times out, in epoch ms. */
    deadline: number,
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
export type Failure = Extract<SendResult, { kind: 'error' }>;

/** A failed attempt's result. */
export const failed = (error: Failure['error'], reason: string): Failure => ({
  kind: 'error',
  error,
  reason,
});

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
    readonly result: Failure,
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
async function guardBrokerAddress(url: string, allow: CidrList): Promise<void> {
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
export function networkFailure(error: unknown, broker: string): Failure | undefined {
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

/**
 * `promise`, or a timeout result at `deadline` (epoch ms; the promise is left to settle). A timer
 * per publish, not an AbortSignal and its listeners: this runs once per message.
 */
function withTimeout(
  promise: Promise<SendResult>,
  deadline: number,
  reason: string,
): Promise<SendResult> {
  const wait = deadline - Date.now();
  if (wait <= 0) return Promise.resolve(failed('timeout', reason));
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(failed('timeout', reason)), wait);
    timer.unref();
    promise.then(
      (result) => {
        clearTimeout(timer);
        resolve(result);
      },
      (error: unknown) => {
        clearTimeout(timer);
        resolve(failed('error', errorMessage(error)));
      },
    );
  });
}

/** The host:port a reason names (never the credentials). */
function brokerHost(url: string): string {
  const parsed = new URL(url);
  return parsed.port ? `${parsed.hostname}:${parsed.port}` : parsed.hostname;
}

/** The credentials of a destination: its fields, or else its URL's user info (decoded). */
function credentialsOf(destination: BrokerDestination): {
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

/** What a client's connect error says beyond a network failure, by its message or error code. */
export interface ConnectErrors {
  /** The broker refused the credentials. */
  credentials(message: string, code: string | undefined): boolean;
  /** The connect timed out. */
  timeout?(message: string, code: string | undefined): boolean;
  /** Anything else it says, in words (naming `broker`). */
  other?(message: string, code: string | undefined, broker: string): Failure | undefined;
}

/**
 * The error a publisher's connect throws: a network failure, refused credentials, a timeout or
 * what else `errors` reads in the client's error, or else the client's message.
 */
export function connectError(error: unknown, broker: string, errors: ConnectErrors): BrokerError {
  const message = errorMessage(error);
  const code = errorCode(error);
  let result = networkFailure(error, broker);
  if (!result && errors.credentials(message, code)) {
    result = failed('error', `${broker} refused the credentials (${message})`);
  }
  if (!result && errors.timeout?.(message, code)) {
    result = failed('timeout', `${broker} did not answer in time`);
  }
  result ??= errors.other?.(message, code, broker);
  result ??= failed('error', `could not connect to ${broker}: ${message}`);
  return new BrokerError(result, { cause: error });
}

/** What a connection needs: the broker as reasons name it, its credentials, its URL without them. */
export interface BrokerTarget {
  broker: string;
  username: string | null;
  password: string | null;
  /** The destination's URL without its user info (the credentials go apart). */
  server: string;
}

/**
 * The target of a connection to `destination`'s broker, once the SSRF guard let it through;
 * `name` is the broker's kind as reasons say it ("RabbitMQ").
 */
export async function brokerTarget(
  name: string,
  destination: BrokerDestination,
  options: PublisherOptions,
): Promise<BrokerTarget> {
  await guardBrokerAddress(destination.url, options.allowCidrs);
  const server = new URL(destination.url);
  server.username = '';
  server.password = '';
  return {
    broker: `${name} at ${brokerHost(destination.url)}`,
    ...credentialsOf(destination),
    server: server.toString(),
  };
}

/**
 * What every broker's publisher shares: a publish that gives up with a `timeout` at the
 * attempt's deadline. A kind says where a message goes (`where`), how it is sent (`send`)
 * and what a broker's refusal means (`refusal`).
 */
export abstract class BrokerPublisher<D extends BrokerDestination> implements Publisher {
  /**
   * `broker`: the broker as reasons name it; `unanswered`: what it did not do in time, before
   * where ("did not confirm the message to").
   */
  protected constructor(
    protected readonly broker: string,
    private readonly unanswered: string,
  ) {}

  abstract get open(): boolean;
  abstract close(): Promise<void>;

  /** Where the message goes, in words (`topic "t"`). */
  protected abstract where(destination: D): string;
  /** Sends the message; what it throws is a network failure or else the kind's `refusal`. */
  protected abstract send(
    destination: D,
    message: BrokerMessage,
    where: string,
  ): Promise<SendResult>;
  /** What the broker's error (not a network failure) says of a message to `where`. */
  protected abstract refusal(error: unknown, where: string): Failure;

  publish(destination: D, message: BrokerMessage, deadline: number): Promise<SendResult> {
    const where = this.where(destination);
    const sent = this.send(destination, message, where).catch(
      (error: unknown) => networkFailure(error, this.broker) ?? this.refusal(error, where),
    );
    return withTimeout(sent, deadline, `${this.broker} ${this.unanswered} ${where} in time`);
  }
}
