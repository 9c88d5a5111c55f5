// The services project runs the http suite on MariaDB instead of SQLite.
process.env.TEST_DATABASE = 'mariadb';
process.env.TEST_MARIADB_URL ??= 'mariadb://root@127.0.0.1:3306';
process.env.TEST_REDIS_URL ??= 'redis://127.0.0.1:6379';
