import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseEnv } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { redact } from '../../src/modules/ingest/redaction.js';
import { leakIn, sample, seeded } from '../support/leaks.js';

/**
 * Real-world leaks (test/fixtures/leaks): a .env file, curl commands with headers, a kube config,
 * an AWS credentials file, git remotes, .git-credentials and .netrc, connection strings, a Docker
 * config, an .npmrc, a shell history with passwords as flags (`mysql -p…`, `docker login -p`,
 * `sshpass -p`) and a `.pgpass`. Each holds «placeholders» that are filled at run time with fake credentials
 * of the right shape (so the repository holds nothing a secret scanner would flag); every one
 * must be gone after redaction, as text (command output), as the structure a workbench would parse
 * it into, and as text JSON-encoded inside a string. What names the places (hosts, users, regions)
 * must stay.
 */

const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const LOWER = 'abcdefghijklmnopqrstuvwxyz';
const DIGITS = '0123456789';
const ALNUM = UPPER + LOWER + DIGITS;
const B64 = `${ALNUM}+/`;
const B64URL = `${ALNUM}-_`;
const HEX = '0123456789abcdef';

const random = seeded(20251123);
const mixed = (n: number) => `aB3${sample(random, ALNUM, n - 3)}`;
const b64url = (json: object) => Buffer.from(JSON.stringify(json)).toString('base64url');

/** A fake value for each kind of placeholder. */
function fake(kind: string): string {
  let end = kind.length;
  while (end > 0 && kind[end - 1]! >= '0' && kind[end - 1]! <= '9') end--;
  const base = kind.slice(0, end);
  switch (base) {
    case 'pw':
      return `${mixed(14)}!${sample(random, DIGITS, 2)}`;
    case 'opaque':
      return mixed(40);
    case 'ghp':
      return `ghp_${mixed(36)}`;
    case 'ghs':
      return `ghs_${mixed(36)}`;
    case 'glpat':
      return `glpat-${mixed(20)}`;
    case 'stripe':
      return `sk_live_${mixed(24)}`;
    case 'openai':
      return `sk-proj-${sample(random, B64URL, 80)}`;
    case 'anthropic':
      return `sk-ant-api03-${sample(random, B64URL, 93)}AA`;
    case 'aws_id':
      return `AKIA${sample(random, UPPER + DIGITS, 16)}`;
    case 'aws_secret':
      return `${sample(random, B64, 39)}Z`;
    case 'sendgrid':
      return `SG.${sample(random, B64URL, 22)}.${sample(random, B64URL, 43)}`;
    case 'hex':
      return sample(random, HEX, Number(kind.slice(3)));
    case 'hf':
      return `hf_${mixed(34)}`;
    case 'gcp':
      return `AIza${sample(random, B64URL, 35)}`;
    case 'b64key':
      return Buffer.from(`-----BEGIN RSA PRIVATE KEY-----\n${sample(random, B64, 600)}\n-----END RSA PRIVATE KEY-----\n`).toString('base64');
    case 'b64long':
      return sample(random, B64, 300);
    case 'b64pw':
      return Buffer.from(mixed(16)).toString('base64');
    case 'jwt':
      return `${b64url({ alg: 'RS256', kid: mixed(8) })}.${b64url({ sub: 'system:serviceaccount:robot', exp: 1_900_000_000 })}.${sample(random, B64URL, 86)}`;
    case 'azure':
      return `${sample(random, B64, 86)}==`;
    case 'basic':
      return Buffer.from(`bob:${mixed(16)}`).toString('base64');
    case 'npm':
      return `npm_${mixed(36)}`;
    default:
      throw new Error(`no fake value for «${kind}»`);
  }
}

interface Filled {
  text: string;
  secrets: string[];
}

function fill(file: string): Filled {
  const template = readFileSync(join(import.meta.dirname, '..', 'fixtures', 'leaks', file), 'utf8');
  const values = new Map<string, string>();
  const text = template.replace(/«([a-z_0-9]+)»/g, (_match, kind: string) => {
    if (!values.has(kind)) values.set(kind, fake(kind));
    return values.get(kind)!;
  });
  expect(values.size).toBeGreaterThan(0);
  return { text, secrets: [...values.values()] };
}

/** Each fixture: how a workbench would hold it as structure, and what must stay. */
const CORPUS: { file: string; parse?: (text: string) => unknown; keeps: string[] }[] = [
  { file: 'dotenv.env', parse: (text) => parseEnv(text), keeps: ['db.internal', 'app_user', 'cache.internal', 'LOG_LEVEL=info', 'hooks.slack.com/services/'] },
  { file: 'curl.sh', keeps: ['https://api.example.com/v1/items', 'Authorization: Bearer', 'X-Api-Key', 'deploy:', 'gitlab.example.com', '"username":"bob"'] },
  { file: 'kubeconfig.yaml', parse: (text) => parseYaml(text) as unknown, keeps: ['https://k8s.example.com:6443', 'client-id', 'kubernetes', 'eu-west-1', 'username'] },
  { file: 'aws-credentials.ini', keeps: ['[default]', 'aws_access_key_id', 'eu-west-1'] },
  { file: 'git-remotes.txt', keeps: ['@github.com/acme/app.git', 'oauth2:', 'x-access-token:', 'bob:', 'machine api.example.com login bob password'] },
  { file: 'connection-strings.txt', keeps: ['analytics:', 'pg.internal:5432', 'cluster0.abcde.mongodb.net', 'User ID=app', 'AccountName=acme', 'user=app'] },
  { file: 'docker-config.json', parse: (text) => JSON.parse(text) as unknown, keeps: ['registry.example.com', 'ghcr.io', 'desktop'] },
  { file: 'npmrc.ini', keeps: ['registry=https://registry.npmjs.org/', 'always-auth=true'] },
  { file: 'shell-history.sh', keeps: ['mysql -u root -p', 'registry.example.com', 'deploy@build.internal', 'pg.internal:5432:app:app_user:', 'ssh -p 2222', 'mkdir -p /srv/app/logs', 'cp -p config.yaml'] },
];

describe('real-world leaks', () => {
  it.each(CORPUS.map((entry) => [entry.file, entry] as const))('%s is redacted', (_file, entry) => {
    const { text, secrets } = fill(entry.file);
    const forms: [string, unknown][] = [
      ['text', { output: text }],
      ['text in a JSON string', { stdout: JSON.stringify({ output: text }) }],
    ];
    if (entry.parse) forms.push(['structure', { parsed: entry.parse(text) }]);
    for (const [form, value] of forms) {
      const redacted = JSON.stringify(redact(value).value);
      const leak = leakIn(redacted, secrets);
      expect([form, leak]).toEqual([form, undefined]);
    }
    const asText = (redact({ output: text }).value).output;
    for (const kept of entry.keeps) expect([kept, asText.includes(kept)]).toEqual([kept, true]);
  });
});
