// Before the services suites: MariaDB and Redis must answer. A missing service fails the run
// loudly; it never turns into skipped tests.
import mysql from 'mysql2/promise';
import { Redis } from 'ioredis';

export default async function checkServices() {
  const mariadb = process.env.TEST_MARIADB_URL ?? 'mariadb://root@127.0.0.1:3306';
  const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
  try {
    const connection = await mysql.createConnection({ uri: mariadb.replace(/^mariadb:/, 'mysql:'), connectTimeout: 3000 });
    await connection.query('SELECT 1');
    await connection.end();
  } catch (error) {
    throw new Error(`test:services needs MariaDB at ${mariadb} and could not reach it (${error.code ?? error.message}). Start it: start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd`, { cause: error });
  }
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 3000, retryStrategy: () => null });
  try {
    await redis.connect();
    await redis.ping();
  } catch (error) {
    throw new Error(`test:services needs Redis at ${redisUrl} and could not reach it (${error.message}). Start it: redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no`, { cause: error });
  } finally {
    redis.disconnect();
  }
}
