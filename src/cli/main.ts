import { defaultLogSink } from './log-destination.js';
import { runCli } from './program.js';

/** Entry of the `platform` command (bin/platform.js, `npm run migrate`). */
const code = await runCli(process.argv.slice(2), {
  env: process.env,
  stdout: (text) => void process.stdout.write(text),
  stderr: (text) => void process.stderr.write(text),
  log: defaultLogSink(process.stderr.isTTY === true, process.env),
});
// Setting the code rather than calling process.exit lets piped output drain first.
process.exitCode = code;
