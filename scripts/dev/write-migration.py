#!/usr/bin/env python3
"""Writes a migration class from SQL statements (one a line) on stdin.
Usage: scripts/dev/write-migration.py <dialect> <Name> <timestamp> <comment> <tables to drop, newest first...> < statements.sql
"""
import json
import sys

dialect, name, stamp, comment, *drops = sys.argv[1:]
statements = [line.strip() for line in sys.stdin if line.strip()]
quote = '"' if dialect == 'sqlite' else '`'
body = '\n'.join(f'    await db.query({json.dumps(s)});' for s in statements)
drop_list = ', '.join(json.dumps(t) for t in drops)
print(f"""import type {{ MigrationInterface, QueryRunner }} from 'typeorm';

/** {comment} */
export class {name}{stamp} implements MigrationInterface {{
  name = '{name}{stamp}';

  async up(db: QueryRunner): Promise<void> {{
{body}
  }}

  async down(db: QueryRunner): Promise<void> {{
    for (const table of [{drop_list}]) {{
      await db.query('DROP TABLE {quote}' + table + '{quote}');
    }}
  }}
}}""")
