import { pino, type Logger, type DestinationStream } from 'pino';
import type { LogLevel } from './config.js';
import { redactLine } from './log-redaction.js';

/**
 * A failed query as a log line may show it: its driver's code and the statement with its
 * placeholders, never the values (mysql2 writes them into `sql` and `sqlMessage`, a duplicate
 * key names the duplicate value in `message`, and TypeORM copies all of it onto its error).
 */
export function serializeError(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  const withQuery = error as Error & { query?: unknown; driverError?: { code?: unknown; errno?: unknown } };
  if (withQuery.query === undefined && withQuery.driverError === undefined) return pino.stdSerializers.err(error);
  return {
    type: error.name,
    // MySQL quotes the offending values in its messages ("Duplicate entry '…' for key '…'"). A
    // quote left open runs to the end (and is hidden too): every match then ends at a quote or at
    // the end, so no later quote starts a scan over the same text again (linear).
    message: error.message.replace(/'(?:[^'\\]|\\[\s\S])*(?:'|\\?$)/g, "'…'").slice(0, 500),
    // `driverCode`: a failed query's `code` would be judged as a possible secret (src/log-redaction.ts).
    driverCode: withQuery.driverError?.code ?? (error as { code?: unknown }).code,
    errno: withQuery.driverError?.errno,
    query: typeof withQuery.query === 'string' ? withQuery.query.slice(0, 2000) : undefined,
    stack: error.stack?.split('\n').slice(1).join('\n'),
  };
}

/**
 * JSON logs. Every line passes `redactLine` as it is written (src/log-redaction.ts): secrets by
 * field name at any depth, by their shape anywhere (messages too), and in URLs' query strings.
 */
export function createLogger(level: LogLevel, destination?: DestinationStream): Logger {
  const options = {
    level,
    base: { service: 'platform-api' },
    serializers: { err: serializeError, error: serializeError },
    timestamp: pino.stdTimeFunctions.isoTime,
    hooks: { streamWrite: redactLine },
  };
  return destination ? pino(options, destination) : pino(options);
}
