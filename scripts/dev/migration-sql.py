#!/usr/bin/env python3
"""Turns TypeORM's schema-diff log (one statement a line) into the statements of a migration.

For SQLite, TypeORM adds foreign keys by rebuilding tables through temporary_* copies; this
keeps only the final CREATE TABLE of each table (renamed back) and its indexes, in order.
Usage: scripts/dev/migration-sql.py sqlite < log.sql
"""
import re
import sys

dialect = sys.argv[1]
lines = [line.strip() for line in sys.stdin if line.strip()]
if dialect != 'sqlite':
    print('\n'.join(lines))
    sys.exit(0)

tables = {}
order = []
indexes = {}
for line in lines:
    m = re.match(r'CREATE TABLE "(temporary_)?([a-z_]+)" ', line)
    if m:
        name = m.group(2)
        tables[name] = line.replace(f'"temporary_{name}"', f'"{name}"')
        if name not in order:
            order.append(name)
        continue
    m = re.match(r'CREATE (UNIQUE )?INDEX "([a-z_]+)" ON "([a-z_]+)"', line)
    if m:
        indexes[m.group(2)] = (m.group(3), line.rstrip())
for name in order:
    print(tables[name])
    for index, (table, statement) in indexes.items():
        if table == name:
            print(statement)
