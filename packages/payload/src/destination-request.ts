import {
  describeDestination,
  type BrokerDestination,
  type Destination,
  type WebhookAuth,
} from '@herald/contract';
import type { DeliveryRequest } from './request.js';

/**
 * A rendered request as its destination takes it (docs/api.md, Destinations; Endpoint
 * authentication): a broker's message, or HTTP with the OAuth2 bearer token's place kept. The
 * attempt sends this and the call log stores its `logged` form; POST /webhooks/preview shows the
 * same, so a preview says what would be published where.
 */
export function requestForDestination(
  request: DeliveryRequest,
  webhook: { destination: Destination; auth: Pick<WebhookAuth, 'kind'> | null },
): DeliveryRequest {
  const { destination } = webhook;
  if (destination.kind !== 'http') return asMessage(request, destination);
  return webhook.auth ? withBearer(request) : request;
}

/**
 * A broker destination's request as the call log shows it: the URL is where the message went
 * (broker, exchange/subject/topic/stream, credentials hidden), the headers its message headers.
 * No `authorization`: Basic auth is HTTP's.
 */
function asMessage(request: DeliveryRequest, destination: BrokerDestination): DeliveryRequest {
  const where = `${destination.kind}: ${describeDestination(destination)}`;
  return {
    ...request,
    url: where,
    headers: messageHeaders(request.headers),
    logged: { url: where, headers: messageHeaders(request.logged.headers) },
  };
}

/** Header names in lower case (as HTTP/2 and the brokers' consumers read them), no Basic auth. */
function messageHeaders(headers: Record<string, string>): Record<string, string> {
  const named: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (lower !== 'authorization') named[lower] = value;
  }
  return named;
}

/**
 * A request of a webhook with OAuth2: any Authorization header of its own (Basic auth, a static
 * header) gives way to the bearer token added at send time, which the call log shows as
 * `Bearer ***`.
 */
function withBearer(request: DeliveryRequest): DeliveryRequest {
  const other = ([name]: [string, string]) => name.toLowerCase() !== 'authorization';
  const headers = Object.fromEntries(Object.entries(request.headers).filter(other));
  const logged = Object.fromEntries(Object.entries(request.logged.headers).filter(other));
  return {
    ...request,
    headers,
    logged: { ...request.logged, headers: { ...logged, Authorization: 'Bearer ***' } },
  };
}
