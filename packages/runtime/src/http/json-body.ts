import type { IncomingMessage } from 'node:http';
import express, { type RequestHandler } from 'express';
import { JSON_TYPES } from './headers.js';

/** The Content-Type of the common case: JSON, UTF-8 or no charset. */
const PLAIN_JSON = /^application\/(?:json|vnd\.api\+json)(?:; ?charset=utf-8)?$/i;
const DECIMAL = /^[0-9]{1,15}$/;
// body-parser's (lib/types/json.js): RFC 7159 whitespace, then the first other character.
// eslint-disable-next-line no-control-regex
const FIRST_NON_WHITESPACE = /^[\x20\x09\x0a\x0d]*([^\x20\x09\x0a\x0d]|$)/;

/**
 * JSON request bodies, as `express.json({limit, type: JSON_TYPES})` reads them, answer for
 * answer, with less work in the common case: a body with a Content-Length within the limit, no
 * Content-Encoding, and a JSON Content-Type that is plain or says UTF-8. That one is read whole
 * and parsed here (body-parser's type, charset and stream plumbing cost ~0.1 ms of CPU per
 * request, most of a small request's parsing); every other body (compressed, chunked, empty,
 * too large, another charset) goes to express.json itself. The answers are the same either way,
 * errors included (json-body.test.ts compares both on arbitrary bodies).
 */
export function jsonBody(limitBytes: number): RequestHandler {
  const general = express.json({ limit: limitBytes, type: JSON_TYPES });
  return (req, res, next) => {
    const { headers } = req;
    const length = headers['content-length'];
    const type = headers['content-type'];
    if (
      length === undefined ||
      !DECIMAL.test(length) ||
      Number(length) === 0 ||
      Number(length) > limitBytes ||
      headers['transfer-encoding'] !== undefined ||
      headers['content-encoding'] !== undefined ||
      type === undefined ||
      !PLAIN_JSON.test(type) ||
      isFinished(req)
    ) {
      general(req, res, next);
      return;
    }
    readJson(req, Number(length), (error, body) => {
      if (error) return next(error);
      req.body = body;
      next();
    });
  };
}

/** on-finished's test, which body-parser makes first: a request read already is not parsed. */
function isFinished(req: IncomingMessage): boolean {
  const socket = req.socket as IncomingMessage['socket'] | null;
  const upgrade = (req as { upgrade?: boolean }).upgrade;
  return Boolean(upgrade || !socket || !socket.readable || (req.complete && !req.readable));
}

type BodyError = Error & { status: number; statusCode: number; expose: true; type: string };

/** An error as body-parser gives it (http-errors, status 400): errorHandler maps it by type. */
function bodyError(error: Error, type: string): BodyError {
  return Object.assign(error, { status: 400, statusCode: 400, expose: true as const, type });
}

function readJson(
  req: IncomingMessage,
  length: number,
  done: (error: BodyError | undefined, body?: unknown) => void,
): void {
  const chunks: Buffer[] = [];
  let received = 0;
  let settled = false;
  const settle = (error: BodyError | undefined, body?: unknown) => {
    if (settled) return;
    settled = true;
    req.off('data', onData);
    req.off('end', onEnd);
    req.off('aborted', onAborted);
    req.off('error', onAborted);
    req.off('close', onClose);
    done(error, body);
  };
  const onData = (chunk: Buffer) => {
    received += chunk.length;
    chunks.push(chunk);
  };
  // raw-body's errors, by the same types and messages.
  const onAborted = () =>
    settle(bodyError(new Error('request aborted'), 'request.aborted'), undefined);
  const onClose = () => {
    if (!req.complete) onAborted();
  };
  const onEnd = () => {
    if (received !== length) {
      settle(
        bodyError(new Error('request size did not match content length'), 'request.size.invalid'),
      );
      return;
    }
    const buffer = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received);
    // iconv-lite's UTF-8 decoding, as raw-body does it: a byte order mark is dropped.
    let text = buffer.toString('utf8');
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    let body: unknown;
    try {
      body = parseStrict(text);
    } catch (error) {
      settle(bodyError(error as Error, 'entity.parse.failed'));
      return;
    }
    settle(undefined, body);
  };
  req.on('data', onData);
  req.on('end', onEnd);
  req.on('aborted', onAborted);
  req.on('error', onAborted);
  req.on('close', onClose);
}

/** body-parser's strict JSON parse (lib/types/json.js), so that its errors read the same. */
function parseStrict(text: string): unknown {
  // An empty body is {} to body-parser ("a common client-side mistake").
  if (text.length === 0) return {};
  if (text[0] !== '{' && text[0] !== '[') {
    const first = FIRST_NON_WHITESPACE.exec(text)?.[1] || undefined;
    if (first !== '{' && first !== '[') throw strictSyntaxError(text, String(first));
  }
  return JSON.parse(text);
}

/**
 * The error JSON.parse gives for a body whose first character is not `{` or `[`, as body-parser
 * words it: the parse error of the text with everything from that character on masked, then
 * unmasked in the message.
 */
function strictSyntaxError(text: string, first: string): Error {
  const index = text.indexOf(first);
  const partial = index === -1 ? '' : text.slice(0, index) + '#'.repeat(text.length - index);
  try {
    JSON.parse(partial);
    return new SyntaxError('strict violation');
  } catch (error) {
    const syntax = error as SyntaxError;
    syntax.message = syntax.message.replace(/#+/g, (mask) =>
      text.slice(index, index + mask.length),
    );
    return syntax;
  }
}
