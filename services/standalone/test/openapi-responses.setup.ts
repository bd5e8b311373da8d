import { afterAll, afterEach } from 'vitest';
import {
  assertExchangesMatch,
  createResponseChecker,
  recordExchanges,
  takeExchanges,
  type Exchange,
} from '@herald/testkit';

// vitest's setupFiles entry, for every test file: each answer an app served by testkit's `serve`
// gives is checked against the OpenAPI document (GET /openapi.json) when the test that caused it
// ends (after the file, for its hooks'), and a mismatch fails that test. So the document cannot
// drift from what the routes answer. The document and its checker are built on the first answer:
// files that serve nothing never load them.
recordExchanges();

let check: ((exchange: Exchange) => string[]) | undefined;

async function checkAnswers(): Promise<void> {
  const exchanges = takeExchanges();
  if (exchanges.length === 0) return;
  if (!check) {
    const { apiDocument } = await import('@herald/ingest');
    check = createResponseChecker(apiDocument());
  }
  assertExchangesMatch(check, exchanges);
}

afterEach(checkAnswers);
afterAll(checkAnswers);
