import type { DataSource, EntityManager } from 'typeorm';

/**
 * Where the hot reads that may tolerate a little lag go: the primary, or a read replica
 * (`DATABASE_READ_URL`, src/db/read-replica.ts). Declared here, low, so that the modules that own
 * the queries take it as a dependency (src/app.ts wires it); a module never decides by itself
 * what may be read from a replica.
 *
 * Only two kinds of read are offered, each with the rule that makes it safe:
 * - `credential`: a credential's row by its hash (a device access token, a Cloud session's access
 *   token). The replica answers only while it has applied every revocation this process knows
 *   of; a row it does not have (a token issued a moment ago) is read again on the primary.
 * - `settled`: rows that never change once written (the policy revisions up to a publish number
 *   already read on the primary). The replica answers only when `whole` says its answer has
 *   everything; otherwise the primary does.
 *
 * Everything else (writes, transactions, single-use redemptions, reuse detection, the newest
 * publish numbers, the revocation counter) uses the primary's DataSource directly.
 */
export interface Reads {
  credential<T>(read: (manager: EntityManager) => Promise<T | null>): Promise<T | null>;
  settled<T>(read: (manager: EntityManager) => Promise<T>, whole: (answer: T) => boolean): Promise<T>;
}

/** Every read on the primary: the embedded default, the command line, and without `DATABASE_READ_URL`. */
export function primaryReads(primary: DataSource): Reads {
  return {
    credential: (read) => read(primary.manager),
    settled: (read) => read(primary.manager),
  };
}
