import { randomUUID } from 'node:crypto';
import { subscriberOf, type RedisClient } from '../../adapters/state/redis.js';
import { EventSubscriber } from 'typeorm';
import type { DataSource, EntitySubscriberInterface, InsertEvent, QueryRunner, RemoveEvent, TransactionCommitEvent, TransactionRollbackEvent, UpdateEvent } from 'typeorm';
import type { Clock } from '../util/clock.js';

/**
 * Revocations: how the in-process caches of verified credentials (src/auth/auth-cache.ts) learn
 * that something they hold may have ended.
 *
 * - **Where it is written.** A TypeORM subscriber on every DataSource (`createDataSource`) sees
 *   each update and delete of the tables an access depends on (device tokens, devices,
 *   memberships, people, identities, organisations, Cloud sessions and their tokens), whoever
 *   made it: a route, a service, the command line in another process. Updates that end nothing
 *   (a device's `last seen`, a refresh token marked used) are ignored. It also sees each new
 *   policy publish (an insert into `policy_revisions`): the policy service keeps the newest
 *   publish numbers in a cache of the same kind (src/modules/policy/service.ts), so a publish
 *   reaches the workbenches' polls the way a revocation reaches their tokens. After the change is
 *   committed (at once outside a transaction), it
 *   1. tells this process's listeners: the caches are dropped before the call that revoked returns,
 *      so the very next request on this replica reads the database;
 *   2. adds one to the revocation counter row (`auth_revocations`, migration 1763870000000), which
 *      every server reads at most once a second: another process without Redis (the command line
 *      on the embedded SQLite) reaches every server within a second. Inside a transaction the
 *      counter moves in that transaction, just before its commit, so the change and the counter
 *      are committed (and replicated, src/db/read-replica.ts) together or not at all;
 *   3. once the counter has moved, through the listener of `AuthRevocations` below, publishes on
 *      Redis (`REDIS_URL`), so every replica drops its caches as soon as the message arrives (and
 *      a replica that reads the counter then finds it moved).
 * - **Races.** A request that read the database before a revocation committed must not store what
 *   it read after the caches were dropped: `generation` moves on every drop, and a cache stores an
 *   entry only if the generation it started with is still current. Inside a transaction the
 *   caches of this process are dropped at the change, and at the commit once more, when the
 *   other replicas are told (once: nothing is published for a change they cannot see yet); a
 *   rollback drops this process's caches again and tells nobody else (the counter's move rolls
 *   back with the change).
 */

/** Per table: the columns whose change ends nothing (an update touching only these is ignored). */
const WATCHED: Record<string, readonly string[]> = {
  device_tokens: ['usedAt', 'graceSealed', 'graceUntil'],
  devices: ['lastSeenAt', 'name'],
  memberships: [],
  people: ['name', 'email', 'picture', 'pictureUrl', 'updatedAt'],
  person_identities: ['email', 'name'],
  organisations: [],
  cloud_sessions: ['lastUsedAt', 'lastSeenAt'],
  cloud_session_tokens: ['usedAt', 'graceSealed', 'graceUntil'],
};

/** Tables whose new rows change what a cache holds: a new policy publish. */
const WATCHED_INSERTS: ReadonlySet<string> = new Set(['policy_revisions']);

export const REVOCATION_TABLE = 'auth_revocations';

/**
 * Told of a watched change: `committed` when other processes can see it now (outside a
 * transaction, or at its commit), false while it is uncommitted or was rolled back, when only
 * this process (which may read its own transaction's rows on SQLite) has anything to forget.
 */
type Listener = (committed: boolean) => void;
const listeners = new WeakMap<DataSource, Set<Listener>>();
/** Query runners inside a transaction that changed something watched, to signal at commit. */
const pending = new WeakSet<QueryRunner>();

function quoted(dataSource: DataSource, name: string): string {
  return dataSource.options.type === 'better-sqlite3' ? `"${name}"` : `\`${name}\``;
}

function counterUpdate(dataSource: DataSource): string {
  return `UPDATE ${quoted(dataSource, REVOCATION_TABLE)} SET ${quoted(dataSource, 'counter')} = ${quoted(dataSource, 'counter')} + 1 WHERE ${quoted(dataSource, 'id')} = 1`;
}

/** Adds one to the counter row after a change made outside a transaction (already committed). */
async function bumpCounter(dataSource: DataSource, runner: QueryRunner | undefined): Promise<void> {
  const sql = counterUpdate(dataSource);
  try {
    await (runner && !runner.isReleased ? runner.query(sql) : dataSource.query(sql));
  } catch {
    // The change itself is committed; without the counter, other processes that have no RedisClient
    // still stop trusting their cached entries when these reach AUTH_CACHE_MAX_AGE_SECONDS.
  }
}

/**
 * The counter's value on `dataSource` (the primary, or a read replica: src/db/read-replica.ts);
 * undefined when it cannot be read, or (`throwing`) the failure.
 */
export async function readRevocationCounter(dataSource: DataSource, options: { throwing?: boolean } = {}): Promise<number | undefined> {
  try {
    const rows = await dataSource.query<{ counter: number | string }[]>(
      `SELECT ${quoted(dataSource, 'counter')} AS counter FROM ${quoted(dataSource, REVOCATION_TABLE)} WHERE ${quoted(dataSource, 'id')} = 1`,
    );
    return rows[0] === undefined ? undefined : Number(rows[0].counter);
  } catch (error) {
    if (options.throwing) throw error;
    return undefined;
  }
}

/** The depth of a runner's transaction (TypeORM counts savepoints; 1 is the outermost). */
function transactionDepth(runner: QueryRunner): number {
  return (runner as unknown as { transactionDepth?: number }).transactionDepth ?? 1;
}

function notify(dataSource: DataSource, committed: boolean): void {
  for (const listener of listeners.get(dataSource) ?? []) {
    try {
      listener(committed);
    } catch {
      // one listener's failure does not keep the others from dropping their caches
    }
  }
}

function relevant(table: string, changed: object | undefined): boolean {
  const harmless = WATCHED[table];
  if (!harmless) return false;
  if (!changed) return true;
  const keys = Object.keys(changed);
  return keys.length === 0 || keys.some((key) => !harmless.includes(key));
}

async function changed(dataSource: DataSource, runner: QueryRunner | undefined): Promise<void> {
  if (runner?.isTransactionActive) {
    notify(dataSource, false);
    pending.add(runner);
    return;
  }
  notify(dataSource, false);
  await bumpCounter(dataSource, runner);
  // Told (and published) only once the counter has moved: a replica told must find it moved.
  notify(dataSource, true);
}

/** The subscriber every DataSource carries (see `createDataSource`). */
export class RevocationSubscriber implements EntitySubscriberInterface {
  async afterInsert(event: InsertEvent<object>): Promise<void> {
    if (!event.metadata || !WATCHED_INSERTS.has(event.metadata.tableName)) return;
    await changed(event.connection, event.queryRunner);
  }

  async afterUpdate(event: UpdateEvent<object>): Promise<void> {
    if (!event.metadata || !relevant(event.metadata.tableName, event.entity)) return;
    await changed(event.connection, event.queryRunner);
  }

  async afterRemove(event: RemoveEvent<object>): Promise<void> {
    if (!event.metadata || !relevant(event.metadata.tableName, undefined)) return;
    await changed(event.connection, event.queryRunner);
  }

  /**
   * The counter moves in the transaction that made the change, as its last statement: committed
   * with it, or rolled back with it (a failure here fails the commit, and the change with it).
   */
  async beforeTransactionCommit(event: TransactionCommitEvent): Promise<void> {
    const runner = event.queryRunner;
    // A nested transaction (a savepoint) commits into its parent: the outermost moves the counter.
    if (!pending.has(runner) || transactionDepth(runner) > 1) return;
    await runner.query(counterUpdate(event.connection));
  }

  afterTransactionCommit(event: TransactionCommitEvent): void {
    const runner = event.queryRunner;
    if (!pending.has(runner)) return;
    if (runner.isTransactionActive) return;
    pending.delete(runner);
    notify(event.connection, true);
  }

  afterTransactionRollback(event: TransactionRollbackEvent): void {
    if (event.queryRunner.isTransactionActive || !pending.has(event.queryRunner)) return;
    pending.delete(event.queryRunner);
    // On SQLite this process reads through the transaction's connection and may have cached what
    // it wrote (a publish that lost its race): forget that too. Nothing reached other processes,
    // so nothing is published to them.
    notify(event.connection, false);
  }
}
// What the `@EventSubscriber()` decorator does (this code base uses no decorators): a class in a
// DataSource's `subscribers` is only instantiated once registered so.
EventSubscriber()(RevocationSubscriber);

/** Calls `listener` whenever a watched change of this DataSource is made in this process. */
export function onLocalRevocation(dataSource: DataSource, listener: Listener): () => void {
  let set = listeners.get(dataSource);
  if (!set) listeners.set(dataSource, (set = new Set()));
  set.add(listener);
  return () => set.delete(listener);
}

/** Anything that holds verified credentials and can forget them all at once. */
export interface Droppable {
  clear(): void;
}

export const REVOCATION_CHANNEL = 'platform:auth-revocations';
/** The counter is read at most this often (a second, the bound the spec promises). */
export const COUNTER_CHECK_MS = 1_000;

/**
 * One per platform: drops the registered caches on a local change, on a message from another
 * replica, or when the counter row moved since it was last read.
 */
export class AuthRevocations {
  /** Moves on every drop; a cache stores an entry only if it did not move meanwhile. */
  generation = 0;
  private readonly caches = new Set<Droppable>();
  private readonly id = randomUUID();
  private known: number | undefined;
  private checkedAt = Number.NEGATIVE_INFINITY;
  private inFlight: Promise<void> | undefined;
  private subscriber: RedisClient | undefined;
  private readonly unlisten: () => void;

  constructor(
    private readonly dataSource: DataSource,
    private readonly clock: Clock,
    private readonly redis?: RedisClient,
  ) {
    this.unlisten = onLocalRevocation(dataSource, (committed) => {
      this.drop();
      // Other replicas are told once, when they can see the change. Fire and forget: a replica
      // that misses it still reads the counter within a second.
      if (committed) this.redis?.publish(REVOCATION_CHANNEL, this.id).catch(() => undefined);
    });
  }

  register<T extends Droppable>(cache: T): T {
    this.caches.add(cache);
    return cache;
  }

  /** Forgets every cached credential now. */
  drop(): void {
    this.generation += 1;
    for (const cache of this.caches) cache.clear();
  }

  /**
   * Before a cached entry is trusted: reads the counter when the last reading is a second old or
   * more (one reading shared by the requests that arrive meanwhile) and drops the caches when it
   * moved.
   */
  fresh(): Promise<void> | undefined {
    if (this.inFlight) return this.inFlight;
    const now = this.clock.now().getTime();
    if (now - this.checkedAt < COUNTER_CHECK_MS) return undefined;
    this.checkedAt = now;
    this.inFlight = this.readCounter()
      .then((value) => {
        if (value !== undefined && this.known !== undefined && value !== this.known) this.drop();
        // The first reading: whatever was cached before it cannot be trusted to be newer.
        if (value !== undefined && this.known === undefined) this.drop();
        if (value !== undefined) this.known = value;
        // Unreadable counter: drop, and try again at the next request.
        if (value === undefined) {
          this.drop();
          this.checkedAt = Number.NEGATIVE_INFINITY;
        }
      })
      .finally(() => {
        this.inFlight = undefined;
      });
    return this.inFlight;
  }

  private readCounter(): Promise<number | undefined> {
    return readRevocationCounter(this.dataSource);
  }

  /** Subscribes to the other replicas' messages (with RedisClient). */
  async start(): Promise<void> {
    if (!this.redis || this.subscriber) return;
    const subscriber = subscriberOf(this.redis);
    this.subscriber = subscriber;
    subscriber.on('error', () => undefined);
    subscriber.on('message', (_channel: string, from: string) => {
      if (from !== this.id) this.drop();
    });
    // Never wait for Redis to come back: the counter covers the time without it.
    subscriber.subscribe(REVOCATION_CHANNEL).catch(() => undefined);
  }

  async stop(): Promise<void> {
    this.unlisten();
    const subscriber = this.subscriber;
    this.subscriber = undefined;
    if (subscriber) subscriber.disconnect();
  }
}
