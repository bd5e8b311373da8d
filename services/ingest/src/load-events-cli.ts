import { parseArgs } from 'node:util';
import { SingleBar, Presets } from 'cli-progress';
import { BatchRejectedError, countEvents, loadEvents, type LoadSummary } from './load-events.js';

const USAGE = `Usage: pnpm load-events <file.json|file.ndjson> [options]

Sends the events of a JSON file (an array, or {"data": [...]}) or an NDJSON file (one event per
line, streamed) to POST /events in batches.

  --url <url>          Herald's base URL (default $HERALD_URL or http://127.0.0.1:3000)
  --token <token>      a producer or admin token (default $HERALD_TOKEN)
  --environment <id>   X-Environment for events that do not name their environment
  --batch-size <n>     events per request, 1-1000 (default 500)
  --concurrency <n>    requests in flight (default 2)
  --no-progress        no progress bar (also when stderr is not a terminal)`;

/** The file being loaded, for the message of a failure. */
let loading: string | undefined;

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      url: { type: 'string' },
      token: { type: 'string' },
      environment: { type: 'string' },
      'batch-size': { type: 'string', default: '500' },
      concurrency: { type: 'string', default: '2' },
      'no-progress': { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  const [file] = positionals;
  if (values.help || !file) {
    process.stdout.write(`${USAGE}\n`);
    process.exitCode = values.help ? 0 : 2;
    return;
  }
  loading = file;
  const token = values.token ?? process.env['HERALD_TOKEN'];
  if (!token) throw new Error('a token is needed: --token or HERALD_TOKEN');
  const batchSize = Number(values['batch-size']);
  const concurrency = Number(values.concurrency);
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 1000) {
    throw new Error('--batch-size must be an integer from 1 to 1000');
  }
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 64) {
    throw new Error('--concurrency must be an integer from 1 to 64');
  }

  const showProgress = !values['no-progress'] && process.stderr.isTTY;
  const bar = showProgress
    ? new SingleBar(
        {
          format:
            'events {bar} {value}/{total} ({percentage}%) {rate} events/s eta {eta_formatted}',
          stream: process.stderr,
        },
        Presets.shades_classic,
      )
    : undefined;
  bar?.start(await countEvents(file), 0, { rate: 0 });
  const started = Date.now();
  try {
    const summary = await loadEvents({
      file,
      url: values.url ?? process.env['HERALD_URL'] ?? 'http://127.0.0.1:3000',
      token,
      environment: values.environment,
      batchSize,
      concurrency,
      onProgress: (sent) =>
        bar?.update(sent, { rate: Math.round(sent / ((Date.now() - started) / 1000 || 1)) }),
    });
    bar?.stop();
    process.stdout.write(`${describeSummary(summary)}\n`);
  } catch (error) {
    bar?.stop();
    throw error;
  }
}

function describeSummary(summary: LoadSummary): string {
  return (
    `${summary.accepted} accepted, ${summary.duplicate} duplicate, ${summary.batches} batches ` +
    `in ${summary.seconds.toFixed(1)} s (${Math.round(summary.perSecond)} events/s)`
  );
}

/** A batch refused: what was stored, each refused event by its place in the file, how to resume. */
function describeRejection(error: BatchRejectedError, file: string): string {
  const lines = [
    `a batch starting at event #${error.firstEvent + 1} was refused (${error.status}); nothing of that batch was stored.`,
  ];
  if (error.summary) lines.push(`Before it stopped: ${describeSummary(error.summary)}.`);
  if (error.refused.length > 0) {
    lines.push('Refused:');
    for (const refused of error.refused) lines.push(`  ${refused.place}: ${refused.reason}`);
  } else {
    lines.push(`Herald answered: ${error.body}`);
  }
  if (error.resumeFrom) {
    lines.push(
      `Everything before ${error.resumeFrom} is stored. Fix the refused events and run the same ` +
        `command again: stored events come back as duplicates, nothing is stored twice` +
        (error.resumeFrom.startsWith('line ')
          ? ` (or go on from there: tail -n +${error.resumeFrom.slice(5)} ${file} > rest.ndjson).`
          : '.'),
    );
  }
  return lines.join('\n');
}

main().catch((error: unknown) => {
  const message =
    error instanceof BatchRejectedError
      ? describeRejection(error, loading ?? 'the file')
      : error instanceof Error
        ? error.message
        : String(error);
  process.stderr.write(`load-events: ${message}\n`);
  process.exitCode = 1;
});
