import { runCli } from './cli-commands.js';

// The `herald` command (pnpm herald …): the commands are in cli-commands.ts, which tests call
// in-process.
const code = await runCli(process.argv.slice(2), process.env, process);
if (code !== 0) process.exit(code);
