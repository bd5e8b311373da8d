import { pino, type Logger, type LevelWithSilent } from 'pino';

export type { Logger };

/** Paths never written to logs: credentials, secrets and payload bodies. */
export const REDACT_PATHS = [
  'authorization',
  'password',
  'secret',
  'token',
  'signing_secret',
  'http_basic_password',
  'client_secret',
  'client_key',
  'access_token',
  'payload',
  'body',
  '*.authorization',
  '*.Authorization',
  '*.password',
  '*.secret',
  '*.token',
  '*.signing_secret',
  '*.http_basic_password',
  '*.client_secret',
  '*.client_key',
  '*.access_token',
  '*.auth.client_secret',
  '*.tls.client_key',
  '*.payload',
  '*.body',
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  // A webhook's broker destination: its URL may hold credentials (docs/api.md, Destinations).
  'destination.url',
  'destination.password',
  '*.destination.url',
  '*.destination.password',
];

export function createLogger(options: {
  level: LevelWithSilent;
  name: string;
  destination?: NodeJS.WritableStream;
}): Logger {
  return pino(
    {
      name: options.name,
      level: options.level,
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    options.destination ?? process.stdout,
  );
}
