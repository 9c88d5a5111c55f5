import { pino, type Logger, type DestinationStream } from 'pino';
import type { LogLevel } from './config.js';
import { REDACTED_PATHS } from './http/edge.js';

/** JSON logs; credentials are redacted by path wherever they would appear. */
export function createLogger(level: LogLevel, destination?: DestinationStream): Logger {
  const options = {
    level,
    base: { service: 'platform-api' },
    redact: { paths: REDACTED_PATHS, censor: '[REDACTED]' },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return destination ? pino(options, destination) : pino(options);
}
