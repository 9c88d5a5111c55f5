import { runCli } from '../../src/cli/program.js';
import type { CliDependencies } from '../../src/cli/context.js';
import { recordLogs } from './suite-record.js';

/** The command line's log lines of every run in this file, for the suite-wide secret scan. */
const logLines: Record<string, unknown>[] = [];
recordLogs('cli', logLines);

export interface CliOutcome {
  code: number;
  stdout: string;
  /** What the command line told a person on stderr (its JSON log lines taken out). */
  stderr: string;
  /** Its JSON log lines on stderr (audit lines), parsed. */
  log: Record<string, unknown>[];
  /** The line saying which database it worked on (`sqlite /path`, `mariadb host:port/db`), if it opened one. */
  database: string | undefined;
}

/** One run of the command line in process, its output captured. */
export async function runCliCapturing(args: readonly string[], deps: Omit<CliDependencies, 'stdout' | 'stderr'>): Promise<CliOutcome> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, { ...deps, stdout: (text) => void (stdout += text), stderr: (text) => void (stderr += text) });
  const log: Record<string, unknown>[] = [];
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
  logLines.push(...log);
  return { code, stdout, stderr: human, log, database };
}

/** The audit entries of a run. */
export function auditsOf(outcome: CliOutcome): Record<string, unknown>[] {
  return outcome.log.filter((line) => line.audit !== undefined).map((line) => line.audit as Record<string, unknown>);
}
