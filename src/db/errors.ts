import { QueryFailedError } from 'typeorm';

/** A unique or primary key was violated: someone else inserted the same row first. */
export function isUniqueViolation(error: unknown): boolean {
  if (!(error instanceof QueryFailedError)) return false;
  const code = (error.driverError as { code?: string } | undefined)?.code ?? '';
  return code === 'ER_DUP_ENTRY' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/** A row another row refers to is gone (or a referring row remains): someone deleted it meanwhile. */
export function isForeignKeyViolation(error: unknown): boolean {
  if (!(error instanceof QueryFailedError)) return false;
  const code = (error.driverError as { code?: string } | undefined)?.code ?? '';
  return code === 'ER_NO_REFERENCED_ROW_2' || code === 'ER_ROW_IS_REFERENCED_2' || code === 'SQLITE_CONSTRAINT_FOREIGNKEY';
}

/** InnoDB chose this transaction to undo (a deadlock) or it waited too long for a lock: run it again. */
export function isRetryableConflict(error: unknown): boolean {
  if (!(error instanceof QueryFailedError)) return false;
  const code = (error.driverError as { code?: string } | undefined)?.code ?? '';
  return code === 'ER_LOCK_DEADLOCK' || code === 'ER_LOCK_WAIT_TIMEOUT';
}

/**
 * Runs a transaction, again (at most `attempts` times in all) when the database undid it for a
 * deadlock: the work must be safe to repeat, as a whole transaction is.
 */
export async function withRetries<T>(attempts: number, work: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (attempt < attempts && isRetryableConflict(error)) continue;
      throw error;
    }
  }
}
