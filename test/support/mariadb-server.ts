import { spawn, spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { freePort } from './redis-server.js';
import { ServerProcess } from './server-process.js';

/**
 * A mariadbd process of a test's own: its own free loopback port and data directory (made with
 * mariadb-install-db, root without a password), stopped and started again by the test, the data
 * kept across restarts as a real restart keeps it. Not the shared server on 3306. Fails loudly
 * when MariaDB is not installed or does not start.
 */

const MARIADBD = process.env.TEST_MARIADBD ?? '/usr/sbin/mariadbd';
const INSTALL_DB = process.env.TEST_MARIADB_INSTALL_DB ?? 'mariadb-install-db';

export class MariaDbServer extends ServerProcess {

  private constructor(
    port: number,
    private readonly settings: readonly string[],
  ) {
    super(port, 'platform-mariadb-');
  }

  /**
   * A server with a fresh data directory on a free port, running. `settings`: its character set,
   * collation and SQL mode options (default: utf8mb4 / utf8mb4_general_ci, as Debian configures
   * it); `[]` leaves MariaDB's compiled-in defaults (latin1 / latin1_swedish_ci).
   */
  static async create(settings: readonly string[] = ['--character-set-server=utf8mb4', '--collation-server=utf8mb4_general_ci']): Promise<MariaDbServer> {
    const server = new MariaDbServer(await freePort(), settings);
    const installed = spawnSync(INSTALL_DB, ['--no-defaults', `--datadir=${join(server.dir, 'data')}`, '--auth-root-authentication-method=normal', '--skip-test-db', '--user=root'], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    if (installed.error || installed.status !== 0) {
      rmSync(server.dir, { recursive: true, force: true });
      throw new Error(`${INSTALL_DB} could not make a data directory (is MariaDB installed? Debian: mariadb-server): ${installed.error?.message ?? `${installed.stdout}\n${installed.stderr}`}`);
    }
    await server.start();
    return server;
  }

  /** The server's root URL; add a database name. */
  url(database: string): string {
    return `mysql://root@127.0.0.1:${this.port}/${database}`;
  }

  /** Freezes the server (SIGSTOP) or lets it go on (SIGCONT): connections stay open and nothing answers. */
  freeze(frozen: boolean): void {
    this.process?.kill(frozen ? 'SIGSTOP' : 'SIGCONT');
  }

  get running(): boolean {
    return this.process !== undefined;
  }

  async start(): Promise<void> {
    if (this.process) return;
    const child = spawn(
      MARIADBD,
      [
        '--no-defaults',
        `--datadir=${join(this.dir, 'data')}`,
        `--socket=${join(this.dir, 'mariadb.sock')}`,
        `--pid-file=${join(this.dir, 'mariadb.pid')}`,
        `--port=${this.port}`,
        '--bind-address=127.0.0.1',
        '--user=root',
        // A replication primary of a test asks for its binary log (`--log-bin=…` in settings).
        ...(this.settings.some((setting) => setting.startsWith('--log-bin')) ? [] : ['--skip-log-bin']),
        '--innodb-buffer-pool-size=16M',
        '--max-connections=200',
        ...this.settings,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.process = child;
    await new Promise<void>((resolve, reject) => {
      let output = '';
      const timer = setTimeout(() => reject(new Error(`mariadbd on port ${this.port} did not start in 30 s: ${output}`)), 30_000);
      child.once('error', (error) => {
        clearTimeout(timer);
        this.process = undefined;
        reject(new Error(`${MARIADBD} could not be started (is MariaDB installed? Debian: mariadb-server): ${error.message}`));
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        this.process = undefined;
        reject(new Error(`mariadbd on port ${this.port} exited with ${code}: ${output}`));
      });
      child.stderr.on('data', (chunk: Buffer) => {
        output = (output + chunk.toString('utf8')).slice(-10_000);
        if (output.includes('ready for connections')) {
          clearTimeout(timer);
          child.removeAllListeners('exit');
          resolve();
        }
      });
      child.stdout.resume();
    });
  }

  /** Runs statements as root (creating a database, say); answers the rows of a SELECT or SHOW. */
  async query<T = Record<string, unknown>>(sql: string): Promise<T[]> {
    const connection = await mysql.createConnection({ host: '127.0.0.1', port: this.port, user: 'root', connectTimeout: 5_000 });
    try {
      const [rows] = await connection.query(sql);
      return (Array.isArray(rows) ? rows : []) as T[];
    } finally {
      await connection.end();
    }
  }
}
