import { homedir } from 'node:os';
import { join } from 'node:path';
import { appendLogFile } from './context.js';

/** Said in `--help`: where the log lines go when no option says. */
export const LOG_DESTINATION_HELP = 'stderr when it is not a terminal, otherwise $XDG_STATE_HOME/platform/cli.log (~/.local/state/platform/cli.log)';

/** The log file of a person at a terminal: their state folder (XDG base directories). */
export function terminalLogFile(env: Record<string, string | undefined>): string {
  const state = env.XDG_STATE_HOME?.trim() ? env.XDG_STATE_HOME : join(env.HOME?.trim() ? env.HOME : homedir(), '.local', 'state');
  return join(state, 'platform', 'cli.log');
}

/**
 * Where `platform` writes its JSON log lines when neither `--log-file` nor `--verbose` says:
 * run by a program (kubectl exec, a job, CI: stderr is not a terminal) they stay on stderr, where
 * that program's log collection keeps the audit trail; a person at a terminal gets them in a
 * file, so they never land in the middle of the answer they are reading.
 */
export function defaultLogSink(stderrIsTerminal: boolean, env: Record<string, string | undefined>): ((line: string) => void) | undefined {
  if (!stderrIsTerminal) return undefined;
  const file = terminalLogFile(env);
  return (line) => appendLogFile(file, line);
}
