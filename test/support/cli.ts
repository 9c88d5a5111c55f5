import { runCli } from '../../src/cli/program.js';
import type { CliDependencies } from '../../src/cli/context.js';
import { recordLogs } from './suite-record.js';

/** The command line's log lines of every run in this file, for the suite-wide secret scan. */
const logLines: Record<string, unknown>[] = [];
recordLogs('cli', logLines);

export interface CliOutcome {
  code: number;
  stdout: string;
  /** What the command line told a person on stderr (JSON log lines there, with --verbose, taken out). */
  stderr: string;
  /** Its JSON log lines (audit lines), parsed: from its log, and from stderr with --verbose. */
  log: Record<string, unknown>[];
  /** Its JSON log lines as written on stderr (only with --verbose). */
  stderrLog: Record<string, unknown>[];
  /** The line saying which database it worked on (`sqlite /path`, `mariadb host:port/db`), if it opened one. */
  database: string | undefined;
}

/** One run of the command line in process, its output captured. */
export async function runCliCapturing(args: readonly string[], deps: Omit<CliDependencies, 'stdout' | 'stderr'>): Promise<CliOutcome> {
  let stdout = '';
  let stderr = '';
  const log: Record<string, unknown>[] = [];
  // The log the binary would write to a file (src/cli/main.ts): kept apart from what a person reads.
  const sink = (line: string) => void log.push(JSON.parse(line) as Record<string, unknown>);
  const code = await runCli(args, { log: sink, ...deps, stdout: (text) => void (stdout += text), stderr: (text) => void (stderr += text) });
  const fromLog = log.length;
  let database: string | undefined;
  const human = stderr
    .split(/(?<=\n)/)
    .filter((line) => {
      if (line.startsWith('database: ')) {
        database = line.slice('database: '.length).trimEnd();
        return false;
      }
      if (!line.startsWith('{')) return true;
      log.push(JSON.parse(line) as Record<string, unknown>);
      return false;
    })
    .join('');
  const stderrLog = log.splice(fromLog);
  logLines.push(...log, ...stderrLog);
  return { code, stdout, stderr: human, log: log.length ? log : stderrLog, stderrLog, database };
}

/** The audit entries of a run. */
export function auditsOf(outcome: CliOutcome): Record<string, unknown>[] {
  return outcome.log.filter((line) => line.audit !== undefined).map((line) => line.audit as Record<string, unknown>);
}
