import { pino, type Logger, type DestinationStream } from 'pino';
import type { LogLevel } from './config.js';
import { REDACTED_PATHS } from './http/edge.js';

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
    // MySQL quotes the offending values in its messages ("Duplicate entry '…' for key '…'").
    message: error.message.replace(/'(?:[^'\\]|\\.)*'/g, "'…'").slice(0, 500),
    // Not `code`: that name is redacted everywhere (it is the OAuth authorization code).
    driverCode: withQuery.driverError?.code ?? (error as { code?: unknown }).code,
    errno: withQuery.driverError?.errno,
    query: typeof withQuery.query === 'string' ? withQuery.query.slice(0, 2000) : undefined,
    stack: error.stack?.split('\n').slice(1).join('\n'),
  };
}

/** JSON logs; credentials are redacted by path wherever they would appear. */
export function createLogger(level: LogLevel, destination?: DestinationStream): Logger {
  const options = {
    level,
    base: { service: 'platform-api' },
    redact: { paths: REDACTED_PATHS, censor: '[REDACTED]' },
    serializers: { err: serializeError, error: serializeError },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return destination ? pino(options, destination) : pino(options);
}
