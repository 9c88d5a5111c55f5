import { describe, expect, it } from '@jest/globals';
import { classifyName, looksRandom, MAX_DEPTH, nameWords, shannonEntropy, TEXT_RULES } from '../../src/modules/ingest/redaction-rules.js';
import { memoryReadRule } from '../../policies/memory-reads.js';
import { redact, redactAuditItem } from '../../src/modules/ingest/redaction.js';
import { ASSIGNMENT_KINDS } from '../../src/modules/ingest/assignments.js';

// Fake credentials are generated at run time from a fixed seed, so the file holds no string a
// secret scanner would flag and every run sees the same values.

const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const LOWER = 'abcdefghijklmnopqrstuvwxyz';
const DIGITS = '0123456789';
const ALNUM = UPPER + LOWER + DIGITS;
const B64URL = ALNUM + '-_';
const B64 = ALNUM + '+/';
const HEX = '0123456789abcdef';

// mulberry32: a small seeded generator with 32-bit state.
let state = 20240607;
function random(): number {
  state = (state + 0x6d2b79f5) | 0;
  let t = Math.imul(state ^ (state >>> 15), 1 | state);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
function sample(alphabet: string, length: number): string {
  let out = '';
  for (let i = 0; i < length; i += 1) out += alphabet[Math.floor(random() * alphabet.length)];
  return out;
}
/** Random characters that mix upper case, lower case and digits for sure. */
const mixed = (length: number): string => `aB3${sample(ALNUM, length - 3)}`;
const b64url = (json: object): string => Buffer.from(JSON.stringify(json)).toString('base64url');
const R = (kind: string): string => `[REDACTED:${kind}]`;

const jwt = `${b64url({ alg: 'ES256', typ: 'JWT' })}.${b64url({ sub: 'usr_1', exp: 1_900_000_000 })}.${sample(B64URL, 86)}`;
const jwe = `${b64url({ alg: 'RSA-OAEP', enc: 'A256GCM' })}.${sample(B64URL, 342)}.${sample(B64URL, 16)}.${sample(B64URL, 120)}.${sample(B64URL, 22)}`;
const pemBody = (lines: number): string => Array.from({ length: lines }, () => sample(B64, 64)).join('\n');
const pem = (label: string, body = pemBody(4)): string => `-----BEGIN ${label}-----\n${body}\n-----END ${label}-----`;
const awsKeyId = `AKIA${sample(UPPER + DIGITS, 16)}`;
const awsSecret = `${sample(B64, 39)}/`;
const azureKey = `${sample(B64, 86)}==`;
const ghp = `ghp_${mixed(36)}`;
const stripe = `sk_live_${mixed(24)}`;
const uuid = '550e8400-e29b-41d4-a716-446655440000';
const gitSha = '9fceb02d0ae598e95dc970b74767f19372d61af8';
const pngDataUri =
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

/** [kind, input, expected output]: each text rule on its own, and in context. */
const POSITIVE: readonly (readonly [string, string, string])[] = (() => {
  const cases: [string, string, string][] = [];
  const whole = (kind: string, secret: string, before = 'value ', after = ' end') =>
    cases.push([kind, `${before}${secret}${after}`, `${before}${R(kind)}${after}`]);

  // This service's own tokens.
  for (const prefix of ['platform_at_', 'platform_rt_', 'platform_cr_', 'platform_dc_', 'platform_ws_']) {
    whole('platform_token', `${prefix}${sample(B64URL, 43)}`);
  }
  whole('platform_token', `platform_jk_${sample(HEX, 16)}_${sample(B64URL, 43)}`, 'join key: "', '"');
  whole('platform_token', `platform_at_${sample(B64URL, 43)}`, 'Authorization: DPoP ', '');

  // JWTs, alone, behind Bearer, in a query string, and encrypted (five parts).
  whole('jwt', jwt, '', '');
  whole('jwt', jwt, 'Authorization: Bearer ', '');
  whole('jwt', jwt, 'GET /cb?id_token=', '&state=1');
  whole('jwt', jwe, 'jwe ', '.');
  whole('jwt', jwt, 'eyJub3QganNvbg.', ''); // a refused look-alike just before does not hide it

  // PEM private keys: the whole block.
  for (const label of ['PRIVATE KEY', 'RSA PRIVATE KEY', 'EC PRIVATE KEY', 'OPENSSH PRIVATE KEY', 'ENCRYPTED PRIVATE KEY', 'DSA PRIVATE KEY', 'PGP PRIVATE KEY BLOCK']) {
    whole('private_key', pem(label), 'key:\n', '\nthanks');
  }
  whole('private_key', pem('RSA PRIVATE KEY', `Proc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,${sample(HEX, 32).toUpperCase()}\n\n${pemBody(3)}`));
  // JSON in a string is read as JSON (and written back compact when something in it was replaced).
  cases.push(['private_key', `{"private_key": "${pem('PRIVATE KEY').replace(/\n/g, '\\n')}"}`, `{"private_key":"${R('private_key')}"}`]);
  whole('private_key', pem('PRIVATE KEY').replace(/\n/g, '\\n'), 'key = "', '"');
  // Truncated: from BEGIN to the end of the string.
  whole('private_key', `-----BEGIN OPENSSH PRIVATE KEY-----\n${pemBody(2)}`, 'cut off: ', '');

  // Cloud providers.
  whole('aws_access_key', awsKeyId);
  whole('aws_access_key', `ASIA${sample(UPPER + DIGITS, 16)}`, 'AWS_ACCESS_KEY_ID=', '');
  cases.push(['aws_secret_key', `aws_secret_access_key = ${awsSecret}`, `aws_secret_access_key = ${R('aws_secret_key')}`]);
  cases.push(['aws_secret_key', `SecretAccessKey: "${awsSecret}"`, `SecretAccessKey: "${R('aws_secret_key')}"`]);
  cases.push(['aws_secret_key', `export AWS_SECRET_KEY=${awsSecret}`, `export AWS_SECRET_KEY=${R('aws_secret_key')}`]);
  cases.push([
    'aws_secret_key',
    `Access key ID,Secret access key\n${awsKeyId},${awsSecret}`,
    `Access key ID,Secret access key\n${R('aws_access_key')},${R('aws_secret_key')}`,
  ]);
  whole('gcp_api_key', `AIza${sample(B64URL, 35)}`, 'https://maps.example/api?key=', '');
  whole('gcp_client_secret', `GOCSPX-${sample(B64URL, 28)}`);
  whole('gcp_access_token', `ya29.${sample(B64URL, 120)}`);
  cases.push([
    'azure_key',
    `DefaultEndpointsProtocol=https;AccountName=acct1;AccountKey=${azureKey};EndpointSuffix=core.windows.net`,
    `DefaultEndpointsProtocol=https;AccountName=acct1;AccountKey=${R('azure_key')};EndpointSuffix=core.windows.net`,
  ]);
  cases.push([
    'azure_key',
    `Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=root;SharedAccessKey=${sample(B64, 43)}=`,
    `Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=root;SharedAccessKey=${R('azure_key')}`,
  ]);
  cases.push([
    'url_signature',
    'https://acct.blob.core.windows.net/c/b.txt?sv=2022-11-02&se=2030-01-01&sp=r&sig=AbCdEf0123456789%2BghIJKL%3D',
    `https://acct.blob.core.windows.net/c/b.txt?sv=2022-11-02&se=2030-01-01&sp=r&sig=${R('url_signature')}`,
  ]);
  cases.push([
    'url_signature',
    `https://b.s3.amazonaws.com/k?X-Amz-Expires=60&X-Amz-Signature=${sample(HEX, 64)}`,
    `https://b.s3.amazonaws.com/k?X-Amz-Expires=60&X-Amz-Signature=${R('url_signature')}`,
  ]);

  // SaaS keys.
  for (const prefix of ['ghp_', 'gho_', 'ghu_', 'ghs_', 'ghr_']) whole('github_token', `${prefix}${mixed(36)}`);
  whole('github_token', `github_pat_${mixed(22)}_${mixed(59)}`, 'GITHUB_TOKEN=', '');
  whole('github_token', ghp, 'https://x-access-token:', '@github.com/o/r.git');
  whole('gitlab_token', `glpat-${sample(B64URL, 20)}`);
  whole('gitlab_token', `glrt-${sample(B64URL, 24)}`);
  whole('slack_token', `xoxb-${sample(DIGITS, 12)}-${sample(DIGITS, 13)}-${mixed(24)}`);
  whole('slack_token', `xoxp-${sample(DIGITS, 12)}-${sample(DIGITS, 12)}-${sample(DIGITS, 13)}-${sample(HEX, 32)}`);
  whole('slack_token', `xoxa-2-${mixed(40)}`);
  whole('slack_token', `xapp-1-A${sample(DIGITS, 10)}-${sample(DIGITS, 13)}-${sample(HEX, 64)}`);
  cases.push([
    'slack_webhook',
    `post to https://hooks.slack.com/services/T${sample(UPPER + DIGITS, 8)}/B${sample(UPPER + DIGITS, 8)}/${mixed(24)} now`,
    `post to https://hooks.slack.com/services/${R('slack_webhook')} now`,
  ]);
  cases.push([
    'discord_webhook',
    `https://discord.com/api/webhooks/${sample(DIGITS, 18)}/${sample(B64URL, 68)}`,
    `https://discord.com/api/webhooks/${R('discord_webhook')}`,
  ]);
  whole('stripe_key', stripe);
  whole('stripe_key', `rk_live_${mixed(24)}`);
  whole('stripe_key', `sk_test_${mixed(24)}`);
  whole('stripe_key', `whsec_${mixed(32)}`);
  whole('openai_key', `sk-${mixed(48)}`, 'OPENAI_API_KEY=', '');
  whole('openai_key', `sk-proj-${sample(B64URL, 120)}`);
  whole('openai_key', `sk-svcacct-${sample(B64URL, 80)}`);
  whole('anthropic_key', `sk-ant-api03-${sample(B64URL, 93)}AA`, 'ANTHROPIC_API_KEY="', '"');
  whole('anthropic_key', `sk-ant-admin01-${sample(B64URL, 80)}`);
  whole('openrouter_key', `sk-or-v1-${sample(HEX, 64)}`);
  whole('npm_token', `npm_${mixed(36)}`, '//registry.npmjs.org/:_authToken=', '');
  whole('pypi_token', `pypi-AgEIcHlwaS5vcmc${sample(B64URL, 120)}`);
  whole('sendgrid_key', `SG.${sample(B64URL, 22)}.${sample(B64URL, 43)}`);
  whole('huggingface_token', `hf_${mixed(34)}`);
  whole('groq_key', `gsk_${mixed(52)}`);
  whole('xai_key', `xai-${mixed(80)}`);

  // A token as the user of a URL; .netrc entries.
  whole('url_token', ghp.replace('ghp_', 'x9'), 'git remote add origin https://', '@github.com/o/r.git');
  whole('url_token', sample(HEX, 40), 'https://', '@git.example.com/r.git');
  cases.push(['netrc', 'machine api.example.com login bob password hunter2', `machine api.example.com login bob password ${R('netrc')}`]);
  cases.push(['netrc', 'machine git.example.com\n  login bob\n  password s3cr3t-pw\n', `machine git.example.com\n  login bob\n  password ${R('netrc')}\n`]);
  cases.push(['password', 'db.internal:5432:app:app_user:s3cr3t:pw!', `db.internal:5432:app:app_user:${R('password')}`]);
  cases.push(['password', '# pgpass\n*:*:*:replicator:Zq8vR3x\nnext', `# pgpass\n*:*:*:replicator:${R('password')}\nnext`]);

  // Passwords in URLs: user and host stay.
  cases.push(['url_password', 'postgres://app:S3cr3t-pw@db.internal:5432/app', `postgres://app:${R('url_password')}@db.internal:5432/app`]);
  cases.push(['url_password', 'redis://:hunter2@cache:6379/0', `redis://:${R('url_password')}@cache:6379/0`]);
  cases.push(['url_password', 'git clone https://bob:p@ss@git.example.com/r.git', `git clone https://bob:${R('url_password')}@git.example.com/r.git`]);
  cases.push(['url_password', 'amqp://guest:guest@mq', `amqp://guest:${R('url_password')}@mq`]);

  // Authorization, Bearer, Basic, Cookie written out in text.
  cases.push(['authorization', `curl -H "Authorization: token ${mixed(20)}" api`, `curl -H "Authorization: token ${R('authorization')}" api`]);
  cases.push(['authorization', `Proxy-Authorization: ${mixed(30)}`, `Proxy-Authorization: ${R('authorization')}`]);
  cases.push(['bearer_token', `sent Bearer ${mixed(32)} to the API`, `sent Bearer ${R('bearer_token')} to the API`]);
  cases.push(['bearer_token', `bearer ${sample(HEX, 40)}`, `bearer ${R('bearer_token')}`]);
  const basic = Buffer.from('alice:correct horse').toString('base64');
  cases.push(['basic_auth', `header Basic ${basic} sent`, `header Basic ${R('basic_auth')} sent`]);
  cases.push(['cookie', 'Cookie: sid=abc123; theme=dark\nAccept: */*', `Cookie: ${R('cookie')}\nAccept: */*`]);
  cases.push(['cookie', 'set-cookie: session=xyz789; HttpOnly', `set-cookie: ${R('cookie')}`]);

  // Assignments in free text: the name stays.
  cases.push(['assignment', 'password=hunter2', `password=${R('assignment')}`]);
  cases.push(['assignment', 'connect with PASSWORD = hunter2 now', `connect with PASSWORD = ${R('assignment')} now`]);
  cases.push(['assignment', 'DB_PASSWORD=hunter2', `DB_PASSWORD=${R('assignment')}`]);
  cases.push(['assignment', 'Server=db;Uid=sa;Password=P@ssw0rd;', `Server=db;Uid=sa;Password=${R('assignment')};`]);
  cases.push(['assignment', 'secret: Tr0ub4dor#3', `secret: ${R('assignment')}`]);
  cases.push(['assignment', 'Password: correcthorsebattery', `Password: ${R('assignment')}`]);
  cases.push(['assignment', 'body: {"password": "hunter2 with spaces"}', `body: {"password": "${R('assignment')}"}`]);
  cases.push(['secret_value', '{"password": "hunter2 with spaces"}', `{"password":"${R('secret_value')}"}`]);
  cases.push(['assignment', "config = {'api_key': 'abc123xyz'}", `config = {'api_key': '${R('assignment')}'}`]);
  cases.push(['assignment', "array('passwd' => 'abc');", `array('passwd' => '${R('assignment')}');`]);
  cases.push(['assignment', 'GET /cb?code=1&access_token=opaque123&x=1', `GET /cb?code=1&access_token=${R('assignment')}&x=1`]);
  cases.push(['assignment', 'apikey:=xyz12345', `apikey:=${R('assignment')}`]);
  cases.push(['assignment', 'API-KEY=abcdef12', `API-KEY=${R('assignment')}`]);
  cases.push(['assignment', 'client_secret="s"', `client_secret="${R('assignment')}"`]);
  cases.push(['assignment', 'token: abc123def', `token: ${R('assignment')}`]);
  cases.push(['assignment', 'mysql --user=root --password hunter2 db', `mysql --user=root --password ${R('assignment')} db`]);
  cases.push(['assignment', 'cli login --api-key "k3y-value"', `cli login --api-key "${R('assignment')}"`]);
  // Any spacing, any sign, quoted names at any escape level, flags, XML, function arguments, pairs written out.
  cases.push(['assignment', 'password:     hunter2x', `password:     ${R('assignment')}`]);
  cases.push(['assignment', 'export DB_PASS=hunter2', `export DB_PASS=${R('assignment')}`]);
  cases.push(['assignment', 'log {\\"password\\":\\"hunter2\\"} end', `log {\\"password\\":\\"${R('assignment')}\\"} end`]);
  cases.push(['assignment', "define( 'DB_PASSWORD', 'hunter2' );", `define( 'DB_PASSWORD', '${R('assignment')}' );`]);
  cases.push(['assignment', '<Password>hunter2</Password>', `<Password>${R('assignment')}</Password>`]);
  cases.push(['assignment', 'curl -u admin:s3cret https://x', `curl -u admin:${R('assignment')} https://x`]);
  cases.push(['assignment', 'API_KEYS=aB3xY9zQ1wE5,zQ1wE5rT7aB3', `API_KEYS=${R('assignment')}`]);
  cases.push(['assignment', 'text "password": {"value": "x"} end', `text "password": "${R('assignment')}" end`]);
  cases.push(['assignment', '- name: DB_PASSWORD\n  value: hunter2x', `- name: DB_PASSWORD\n  value: ${R('assignment')}`]);
  cases.push(['private_key', `PuTTY-User-Key-File-3: ssh-rsa\nPrivate-Lines: 2\n${sample(B64, 64)}\n${sample(B64, 20)}\nPrivate-MAC: x`, `PuTTY-User-Key-File-3: ssh-rsa\nPrivate-Lines: 2\n${R('private_key')}\nPrivate-MAC: x`]);
  return cases;
})();

/** [kind, input]: look-alikes of each rule that no rule may touch. */
const NEGATIVE: readonly (readonly [string, string])[] = [
  ['platform_token', 'access tokens carry the prefix platform_at_ and nothing else'],
  ['platform_token', 'Authorization: Bearer platform_at_<token>'],
  ['platform_token', 'platform_at_short1'],
  ['platform_token', 'see cross_platform_at_home_settings_page'],
  ['jwt', `${b64url({ typ: 'JWT' })}.${b64url({ sub: '1' })}.${sample(B64URL, 20)}`], // no alg
  ['jwt', `eyJub3QganNvbg.${b64url({ sub: '1' })}.${sample(B64URL, 20)}`], // header is not JSON
  ['jwt', `${b64url({ alg: 'HS256' })}.${b64url({ sub: '1' })}`], // two parts
  ['jwt', 'version v1.2.3 of api.example.com'],
  ['private_key', pem('PUBLIC KEY')],
  ['private_key', pem('CERTIFICATE')],
  ['private_key', 'generate one with ssh-keygen; it writes an OPENSSH PRIVATE KEY file'],
  ['aws_access_key', `AKIA${sample(UPPER, 15)} is one short`],
  ['aws_access_key', `akia${sample(LOWER, 16)}`],
  ['aws_access_key', `XAKIA${sample(UPPER, 16)}`],
  ['aws_access_key', `AKIA${sample(UPPER, 20)}`],
  ['aws_secret_key', `checksum ${sample(B64, 40)}`],
  ['aws_secret_key', `commit ${gitSha}`],
  ['gcp_api_key', `AIza${sample(B64URL, 20)}`],
  ['gcp_client_secret', 'GOCSPX-short'],
  ['gcp_access_token', 'ya29.short'],
  ['azure_key', 'DefaultEndpointsProtocol=https;AccountName=devstoreaccount1;EndpointSuffix=core.windows.net'],
  ['azure_key', 'AccountKey=short'],
  ['url_signature', 'https://example.com/download?sig=abc&v=2'],
  ['url_signature', 'the signature=valid flag'],
  ['github_token', 'ghp_short and gho_ are GitHub prefixes'],
  ['github_token', `xghp_${mixed(36)}`],
  ['gitlab_token', 'glpat-short'],
  ['slack_token', 'xoxo, see you'],
  ['slack_token', 'xoxb-not-a-real-token-at-all'],
  ['slack_webhook', 'see https://hooks.slack.com/ and https://api.slack.com/apps'],
  ['discord_webhook', 'https://discord.com/api/webhooks/ docs'],
  ['stripe_key', `pk_live_${mixed(24)} is publishable`],
  ['stripe_key', `pk_test_${mixed(24)}`],
  ['stripe_key', 'sk_live_short'],
  ['openai_key', 'sk-learn-is-a-python-library-for-machine-learning'],
  ['openai_key', 'task-1234567890abcdefghijklmnopqrstuvwxyz'],
  ['openai_key', `sk-${sample(LOWER, 40)}`],
  ['anthropic_key', 'sk-ant-short'],
  ['openrouter_key', 'sk-or-v1-short'],
  ['npm_token', 'npm_config_registry and npm_package_version'],
  ['pypi_token', 'pypi-server is a package index'],
  ['sendgrid_key', 'SG.short.thing'],
  ['huggingface_token', 'from huggingface_hub import hf_hub_download'],
  ['groq_key', 'gsk_short'],
  ['xai_key', 'pip install xai-sdk'],
  ['url_token', 'https://git@github.com/o/r.git and https://deploy-bot-account@example.com/'],
  ['url_token', 'mailto:averyveryverylongname@example.com'],
  ['netrc', 'the machine learning password policy'],
  ['netrc', 'machine x login y'],
  ['password', 'listening on 0.0.0.0:5432: ready to accept connections'],
  ['password', 'pg.internal:5432 is up'],
  ['url_password', 'https://example.com:8443/path?x=1#y'],
  ['url_password', 'https://user@host.example.com/'],
  ['url_password', 'postgres://localhost:5432/db'],
  ['url_password', 'http://[::1]:8080/health'],
  ['url_password', 'ssh://git@github.com:22/o/r.git and git@github.com:o/r.git'],
  ['url_password', 'mailto:bob@example.com, time 10:30@home'],
  ['authorization', 'Authorization: required for every call'],
  ['authorization', 'Authorization: Bearer abc'],
  ['authorization', 'Authorization: Required.'],
  ['authorization', 'Authorization: Bearer ${TOKEN}'],
  ['bearer_token', 'Bearer authentication is described in RFC 6750.'],
  ['bearer_token', 'the bearer token was refused'],
  ['bearer_token', 'Bearer Unauthorized.'],
  ['bearer_token', 'curl -H "Authorization: Bearer $OPENAI_API_KEY"'],
  ['basic_auth', 'Basic configuration steps: Basic auth is off'],
  ['cookie', 'cookie: a small file a site stores'],
  ['assignment', 'Forgot your password? Reset it from the console.'],
  ['assignment', 'The token expired; ask for a new token.'],
  ['assignment', 'password: required'],
  ['assignment', 'Password:'],
  ['assignment', 'password='],
  ['assignment', 'token=true and secret=null and api_key=none'],
  ['assignment', 'max_tokens=4096 token_count=12 token: 4096'],
  ['assignment', 'passwords must have 12 characters'],
  ['assignment', 'the secret: sauce'],
  ['assignment', 'password=******'],
  ['assignment', 'use --password-file /run/pw or --with-token < file'],
  ['assignment', 'password=${DB_PASSWORD} token="{{ secrets.TOKEN }}" api_key=<your key>'],
  ['assignment', 'tags = ["token", "expired"] and ("password", 12)'],
  ['assignment', '- name: LOG_LEVEL\n  value: debug-verbose-1'],
  ['private_key', 'Private-Lines: none here'],
];

describe('rule table', () => {
  it('every text rule has a kind, a one-line why, lower-case hints and a global indexed pattern', () => {
    for (const rule of TEXT_RULES) {
      expect(rule.kind).toMatch(/^[a-z][a-z0-9_]*$/);
      expect(rule.why.length).toBeGreaterThan(10);
      expect(rule.why).not.toContain('\n');
      expect(rule.hints.length).toBeGreaterThan(0);
      for (const hint of rule.hints) expect(hint).toBe(hint.toLowerCase());
      expect(rule.pattern.flags).toContain('g');
      // A secret group follows a `pre` group the match starts with (redaction.ts reads them so).
      if (rule.pattern.source.includes('(?<secret>')) expect(rule.pattern.source.startsWith('(?<pre>')).toBe(true);
    }
  });

  it('every text rule kind and every kind of the assignment scanner has positive and negative cases', () => {
    const kinds = new Set([...TEXT_RULES.map((rule) => rule.kind), ...ASSIGNMENT_KINDS]);
    expect(new Set(POSITIVE.map(([kind]) => kind))).toEqual(new Set([...kinds, 'secret_value']));
    expect(new Set(NEGATIVE.map(([kind]) => kind))).toEqual(kinds);
  });

  it('covers the kinds the brief asks for', () => {
    const kinds = new Set([...TEXT_RULES.map((rule) => rule.kind), ...ASSIGNMENT_KINDS]);
    for (const kind of [
      'platform_token',
      'jwt',
      'private_key',
      'aws_access_key',
      'aws_secret_key',
      'gcp_api_key',
      'azure_key',
      'github_token',
      'gitlab_token',
      'slack_token',
      'slack_webhook',
      'stripe_key',
      'openai_key',
      'anthropic_key',
      'npm_token',
      'sendgrid_key',
      'url_password',
      'assignment',
    ]) {
      expect(kinds).toContain(kind);
    }
  });
});

describe('text rules: credentials found', () => {
  it.each(POSITIVE.map(([kind, input, output], i) => [i, kind, input, output] as const))('#%i %s', (_i, kind, input, output) => {
    const result = redact(input);
    expect(result.value).toBe(output);
    const markers = output.match(/\[REDACTED:[a-z0-9_]+\]/g) ?? [];
    expect(result.kinds).toContain(kind);
    expect(result.kinds).toEqual([...new Set(markers.map((m) => m.slice(10, -1)))].sort());
    expect(result.count).toBe(markers.length);
  });
});

describe('text rules: look-alikes kept', () => {
  it.each(NEGATIVE.map(([kind, input], i) => [i, kind, input] as const))('#%i %s', (_i, _kind, input) => {
    expect(redact(input)).toEqual({ value: input, count: 0, kinds: [] });
  });

  it.each([
    ['a UUID', uuid],
    ['a git commit SHA', gitSha],
    ['a SHA-256 digest', `sha256:${sample(HEX, 64)}`],
    ['a base64 image', pngDataUri],
    ['a long base64 blob', sample(B64, 4000)],
    ['a sentence with the word token', 'The model used 1,234 tokens; each token costs less than a cent.'],
    ['password as a plain word', 'Choose a password that you do not use elsewhere.'],
    ['a URL without credentials', 'https://docs.example.com/guide/setup?lang=en#passwords'],
    ['a file path', '/home/user/.ssh/id_ed25519 and C:\\Users\\me\\secrets\\notes.txt'],
    ['JSON without secrets', '{"model": "claude", "max_tokens": 1024, "token_type": "Bearer"}'],
    ['an ISO timestamp and ids', '2025-01-02T03:04:05.678Z org_01HV7 dev_9F3K prj_aa12'],
  ])('%s', (_name, input) => {
    expect(redact(input)).toEqual({ value: input, count: 0, kinds: [] });
    expect(redact({ note: input, items: [input] })).toEqual({ value: { note: input, items: [input] }, count: 0, kinds: [] });
  });
});

describe('key rules: values under secret-like keys', () => {
  it.each([
    [{ password: 'hunter2' }],
    [{ 'DB-Password': 'x' }],
    [{ passwd: 'plain' }],
    [{ clientSecret: 'plain words are still secret' }],
    [{ webhook_secret: 'abc' }],
    [{ private_key: 'not even a pem' }],
    [{ Authorization: 'Bearer abc' }],
    [{ proxy_authorization: 'Basic abc' }],
    [{ cookie: 'sid=1' }],
    [{ 'Set-Cookie': 'a=b' }],
    [{ credentials: 'user:pass' }],
    [{ aws_secret_access_key: 'short' }],
    [{ 'API-Key': 'a8Fk2LmQ9zX7pR4t' }],
    [{ x_api_key: sample(HEX, 32) }],
    [{ apiKey: mixed(40) }],
    [{ access_token: mixed(30) }],
    [{ refreshToken: sample(B64URL, 43) }],
    [{ 'X-Auth-Token': uuid }],
    [{ session_id: sample(HEX, 24) }],
    [{ accessKey: 'Q9w8E7r6T5y4' }],
  ])('%o is replaced', (input) => {
    const [key] = Object.keys(input) as [string];
    expect(redact(input)).toEqual({ value: { [key]: R('secret_value') }, count: 1, kinds: ['secret_value'] });
  });

  it.each([
    [{ token: 'abc' }],
    [{ token: 'expired' }],
    [{ api_key: 'not configured' }],
    [{ token: 'aaaaaaaaaaaa' }],
    [{ token: 'authentication' }],
    [{ apiKey: '' }],
    [{ password: '' }],
    [{ password: '   ' }],
    [{ token_type: 'Bearer' }],
    [{ tokenCount: 'aB3xY9zQ1wE5rT7' }],
    [{ secretName: 'aB3xY9zQ1wE5rT7' }],
    [{ passwordHint: 'the name of my first cat' }],
    [{ PWD: '/home/user/project' }],
    [{ commit: gitSha }],
    [{ id: uuid }],
    [{ image: pngDataUri }],
    [{ author: 'aB3xY9zQ1wE5rT7' }],
  ])('%o is kept', (input) => {
    expect(redact(input)).toEqual({ value: input, count: 0, kinds: [] });
  });

  it('keeps booleans and null under any key, and numbers under token-like keys; a number under a password-like key goes', () => {
    const input = { password: true, token: null, api_key: 0, max_tokens: 4096, authorization: false, cookie: undefined };
    expect(redact(input)).toEqual({ value: input, count: 0, kinds: [] });
    expect(redact({ secret: 12345, pin_password: [1234] })).toEqual({ value: { secret: R('secret_value'), pin_password: [R('secret_value')] }, count: 2, kinds: ['secret_value'] });
  });

  it('reports a text-rule kind when the whole value is one recognised credential', () => {
    expect(redact({ token: jwt, private_key: pem('PRIVATE KEY'), password: `platform_at_${sample(B64URL, 43)}` })).toEqual({
      value: { token: R('jwt'), private_key: R('private_key'), password: R('platform_token') },
      count: 3,
      kinds: ['jwt', 'platform_token', 'private_key'],
    });
  });

  it('replaces the whole value, once, when the key says secret and the text only partly matched', () => {
    expect(redact({ authorization: `Bearer ${jwt}` })).toEqual({ value: { authorization: R('secret_value') }, count: 1, kinds: ['secret_value'] });
  });

  it('applies the key to everything beneath it: array items, nested objects, pairs', () => {
    const input = { token: [mixed(20), 'short', 7], credentials: { username: 'bob', password: 'pw', note: 'hi', nested: [{ deeper: 'x' }] } };
    expect(redact(input).value).toEqual({
      token: [R('secret_value'), 'short', 7],
      credentials: { username: R('secret_value'), password: R('secret_value'), note: R('secret_value'), nested: [{ deeper: R('secret_value') }] },
    });
  });

  it('reads keys case- and separator-insensitively', () => {
    for (const key of ['X-Api-Key', 'x_api_key', 'xApiKey', 'X_API_KEY2']) expect(nameWords(key)).toEqual(['x', 'api', 'key']);
    for (const key of ['API-Key', 'x_api_key', 'apiKey', 'API_KEY', 'api.key', 'X-API-KEY']) expect(classifyName(key)).toBe('random');
    for (const key of ['Password', 'DB_PASSWORD', 'client-secret', 'PRIVATE_KEY', 'authorization']) expect(classifyName(key)).toBe('always');
    for (const key of ['name', 'keyId', 'secretName', '', '---']) expect(classifyName(key)).toBeUndefined();
  });
});

describe('entropy', () => {
  it('measures bits per character', () => {
    expect(shannonEntropy('')).toBe(0);
    expect(shannonEntropy('aaaa')).toBe(0);
    expect(shannonEntropy('abcd')).toBe(2);
    expect(shannonEntropy('abcdefgh')).toBe(3);
  });

  it('calls generated values random and words or repeats not', () => {
    expect(looksRandom(sample(HEX, 32))).toBe(true);
    expect(looksRandom(sample(B64URL, 43))).toBe(true);
    expect(looksRandom(uuid)).toBe(true);
    expect(looksRandom('abc12345')).toBe(true); // eight distinct characters, two classes
    expect(looksRandom('aabb1122')).toBe(false); // 2 bits per character
    expect(looksRandom('abc1234')).toBe(false); // too short
    expect(looksRandom('authentication')).toBe(false); // one class
    expect(looksRandom('not configured')).toBe(false); // white space
    expect(looksRandom('a1a1a1a1a1a1a1a1')).toBe(false); // 1 bit per character
  });
});

describe('walker', () => {
  it('replaces several secrets in one string, each with its kind', () => {
    const input = `export GITHUB_TOKEN=${ghp}\nexport DATABASE_URL=postgres://app:pw123@db/app\ncurl -H "Authorization: Bearer ${jwt}" ${stripe}`;
    const result = redact(input);
    expect(result.value).toBe(
      `export GITHUB_TOKEN=${R('github_token')}\nexport DATABASE_URL=postgres://app:${R('url_password')}@db/app\ncurl -H "Authorization: Bearer ${R('jwt')}" ${R('stripe_key')}`,
    );
    expect(result.count).toBe(4);
    expect(result.kinds).toEqual(['github_token', 'jwt', 'stripe_key', 'url_password']);
  });

  it('counts every marker and lists each kind once, sorted', () => {
    const result = redact([ghp, ghp, { a: awsKeyId, b: [ghp] }]);
    expect(result.count).toBe(4);
    expect(result.kinds).toEqual(['aws_access_key', 'github_token']);
  });

  it('walks nested objects and arrays, replaces tokens in keys, and never changes the input', () => {
    const input = Object.freeze({
      kind: 'tool.call',
      data: Object.freeze({
        [ghp]: 'a token used as a key is replaced like any other text',
        args: Object.freeze([Object.freeze({ cmd: `psql postgres://u:pw12345@h/db` }), 42, true, null]),
        env: Object.freeze({ HOME: '/home/u', OPENAI_API_KEY: `sk-${mixed(48)}` }),
      }),
    });
    const before = JSON.stringify(input);
    const result = redact(input);
    expect(JSON.stringify(input)).toBe(before);
    expect(result.value).not.toBe(input);
    expect(result.value.data).not.toBe(input.data);
    expect(result.value).toEqual({
      kind: 'tool.call',
      data: {
        [R('github_token')]: 'a token used as a key is replaced like any other text',
        args: [{ cmd: `psql postgres://u:${R('url_password')}@h/db` }, 42, true, null],
        env: { HOME: '/home/u', OPENAI_API_KEY: R('openai_key') },
      },
    });
  });

  it('copies only the containers on the way to a replacement (copy on write); the rest is the input itself', () => {
    const clean = Object.freeze({ a: Object.freeze({ b: Object.freeze([1, 'two']) }) });
    const result = redact(clean);
    expect(result).toEqual({ value: clean, count: 0, kinds: [] });
    expect(result.value).toBe(clean);

    const untouched = Object.freeze({ HOME: '/home/u' });
    const mixedInput = Object.freeze({
      untouched,
      list: Object.freeze(['plain', 'also plain', Object.freeze({ token: `ghp_${mixed(36)}` }), 'after']),
    });
    const before = JSON.stringify(mixedInput);
    const redacted = redact(mixedInput);
    expect(JSON.stringify(mixedInput)).toBe(before);
    expect(redacted.value).not.toBe(mixedInput);
    expect(redacted.value.untouched).toBe(untouched);
    expect(redacted.value.list).not.toBe(mixedInput.list);
    expect(redacted.value.list).toEqual(['plain', 'also plain', { token: R('github_token') }, 'after']);
    expect(redacted.kinds).toEqual(['github_token']);
  });

  it('keeps primitives at the top level', () => {
    expect(redact(5)).toEqual({ value: 5, count: 0, kinds: [] });
    expect(redact(null)).toEqual({ value: null, count: 0, kinds: [] });
    expect(redact(undefined)).toEqual({ value: undefined, count: 0, kinds: [] });
    expect(redact('short')).toEqual({ value: 'short', count: 0, kinds: [] });
  });

  it('keeps a __proto__ key a key', () => {
    const input = JSON.parse(`{"__proto__": {"password": "x"}, "b": 1}`) as Record<string, unknown>;
    const result = redact(input);
    expect(Object.getPrototypeOf(result.value)).toBe(Object.prototype);
    expect(Object.keys(result.value)).toEqual(['__proto__', 'b']);
    expect(result.value['__proto__']).toEqual({ password: R('secret_value') });
  });

  it(`replaces containers ${MAX_DEPTH} levels deep by [REDACTED:depth]`, () => {
    const nest = (levels: number): unknown => {
      let value: unknown = { leaf: ghp };
      for (let i = 0; i < levels; i += 1) value = { n: value };
      return value;
    };
    const shallow = redact(nest(MAX_DEPTH - 1)); // the leaf object sits at level 31
    expect(shallow.kinds).toEqual(['github_token']);
    const deep = redact(nest(MAX_DEPTH)); // the leaf object sits at level 32
    expect(deep).toMatchObject({ count: 1, kinds: ['depth'] });
    let cursor = deep.value as Record<string, unknown>;
    for (let i = 0; i < MAX_DEPTH - 1; i += 1) cursor = cursor.n as Record<string, unknown>;
    expect(cursor.n).toBe(R('depth'));
    // Arrays count as levels too, and a string at the bottom is still redacted.
    let arrays: unknown = ghp;
    for (let i = 0; i < MAX_DEPTH; i += 1) arrays = [arrays];
    expect(redact(arrays).kinds).toEqual(['github_token']);
    expect(redact([arrays]).kinds).toEqual(['depth']);
  });

  it('cuts cycles', () => {
    const a: Record<string, unknown> = { name: 'a' };
    a.self = a;
    a.list = [a];
    const result = redact(a);
    expect(result.value).toEqual({ name: 'a', self: R('cycle'), list: [R('cycle')] });
    expect(result.kinds).toEqual(['cycle']);
    // A value shared by two siblings is not a cycle.
    const shared = { token: mixed(20) };
    expect(redact({ x: shared, y: shared }).value).toEqual({ x: { token: R('secret_value') }, y: { token: R('secret_value') } });
  });

  it('writes markers that no rule matches again', () => {
    const once = redact({ text: `token=${jwt} password=${ghp} postgres://u:${ghp}@h ${jwt}` });
    const twice = redact(once.value);
    expect(twice).toEqual({ value: once.value, count: 0, kinds: [] });
    expect(once.value.text).toBe(`token=${R('jwt')} password=${R('github_token')} postgres://u:${R('github_token')}@h ${R('jwt')}`);
  });
});

describe('audit items', () => {
  const CONTENT = ['details', 'content', 'value', 'text', 'query', 'result'] as const;

  it('keeps only the label and the non-content fields of a memory read', () => {
    const item = {
      id: 'aud_1',
      at: '2025-01-02T03:04:05.678Z',
      action: 'memory.search',
      label: 'project conventions',
      details: { hits: 3, snippet: 'the deploy password is hunter2' },
      query: 'what is the deploy password',
      result: ['password=hunter2'],
      content: 'anything',
    };
    const before = JSON.stringify(item);
    expect(redactAuditItem(item, CONTENT)).toEqual({
      value: { id: 'aud_1', at: '2025-01-02T03:04:05.678Z', action: 'memory.search', label: 'project conventions' },
      count: 0,
      kinds: [],
    });
    expect(JSON.stringify(item)).toBe(before);
  });

  it('still redacts the label of a memory read, and never drops the label', () => {
    const result = redactAuditItem({ action: 'memory.read', label: `note with ${ghp}`, details: 'x' }, ['label', 'details']);
    expect(result).toEqual({ value: { action: 'memory.read', label: `note with ${R('github_token')}` }, count: 1, kinds: ['github_token'] });
  });

  it('drops exactly the content fields it is given', () => {
    const item = { action: 'memory_read', label: 'l', details: { a: 1 }, body: 'b', note: 'n' };
    expect(redactAuditItem(item, ['body']).value).toEqual({ action: 'memory_read', label: 'l', note: 'n' });
    expect(redactAuditItem(item, []).value).toEqual({ action: 'memory_read', label: 'l', body: 'b', note: 'n' });
  });

  it('keeps every field of other items and redacts label, details and content fields only', () => {
    const item = {
      id: 'aud_2',
      actor: `agent ${ghp}`,
      action: 'tool.call',
      label: `ran curl with ${ghp}`,
      details: { command: `curl -u admin:pw https://admin:pw9876@api.example.com`, env: { API_KEY: mixed(32) }, exitCode: 0 },
      content: `Authorization: Bearer ${jwt}`,
      query: { password: 'pw' },
    };
    const result = redactAuditItem(item, CONTENT);
    expect(result.value).toEqual({
      id: 'aud_2',
      actor: `agent ${ghp}`,
      action: 'tool.call',
      label: `ran curl with ${R('github_token')}`,
      details: { command: `curl -u admin:${R('assignment')} https://admin:${R('url_password')}@api.example.com`, env: { API_KEY: R('secret_value') }, exitCode: 0 },
      content: `Authorization: Bearer ${R('jwt')}`,
      query: { password: R('secret_value') },
    });
    expect(result.count).toBe(6);
    expect(result.kinds).toEqual(['assignment', 'github_token', 'jwt', 'secret_value', 'url_password']);
  });

  it("applies the organisation's rule when it is given one", () => {
    const item = { action: 'notes.search', label: 'l', details: { q: 'x' }, query: 'what' };
    expect(redactAuditItem(item, CONTENT).value).toEqual(item);
    expect(redactAuditItem(item, CONTENT, memoryReadRule({ stores: ['notes'] })).value).toEqual({ action: 'notes.search', label: 'l' });
    const read = { action: 'memory.read', label: 'l', details: { size: 3 } };
    expect(redactAuditItem(read, CONTENT, memoryReadRule({ exclude: ['memory.read'] })).value).toEqual(read);
  });

  it('redacts memory writes like any other item', () => {
    const item = { action: 'memory.write', label: 'saved', details: { text: `remember: api_key=${mixed(20)}` } };
    expect(redactAuditItem(item, CONTENT).value).toEqual({ action: 'memory.write', label: 'saved', details: { text: `remember: api_key=${R('assignment')}` } });
  });

  it('keeps identifiers as received, even one listed as a content field', () => {
    const action = `tool.call ${ghp}`;
    expect(redactAuditItem({ action, id: ghp, at: '2025-01-02T03:04:05.678Z' }, [...CONTENT, 'action'])).toEqual({
      value: { action, id: ghp, at: '2025-01-02T03:04:05.678Z' },
      count: 0,
      kinds: [],
    });
  });

  it('redacts a content field under a secret-like name by its key rule', () => {
    expect(redactAuditItem({ action: 'login', token: mixed(24) }, ['token']).value).toEqual({ action: 'login', token: R('secret_value') });
  });
});

describe('performance', () => {
  // Generous bounds: these guard against catastrophic backtracking (seconds to hours), not
  // against a slow machine. Each string is a megabyte built to make a careless pattern backtrack.
  const MB = 1 << 20;
  const fill = (unit: string): string => unit.repeat(Math.ceil(MB / unit.length)).slice(0, MB);
  const adversarial: [string, string][] = [
    ['letters', fill('a')],
    ['base64url', fill('aB3-_')],
    ['eyJ runs', fill('eyJ')],
    ['eyJ with dots', fill('eyJhbGci.')],
    ['BEGIN without END', fill('-----BEGIN PRIVATE KEY-----\nabc')],
    ['dashes', fill('-')],
    ['scheme runs', fill('a://')],
    ['user colon runs', `https://${fill('a:')}`],
    ['at signs', `https://u:${fill('a@')}`],
    ['assignments', fill('password=')],
    ['prefixed names', fill('db_password_token_secret_')],
    ['colon values', fill('token: ')],
    ['flags', fill('--password --token ')],
    ['-p runs', fill('-p ')],
    ['command -p runs', fill('mysql -p')],
    ['login -p runs', `docker login ${fill('-p ')}`],
    ['pgpass fields', fill('\nh:5432:a:b:')],
    ['sk runs', fill('sk-')],
    ['AKIA runs', fill('AKIA')],
    ['Bearer runs', fill('Bearer ')],
    ['Basic runs', fill('Basic YWJj')],
    ['cookie lines', fill('cookie: a=')],
    ['authorization', fill('Authorization: ')],
    ['refused authorization values', fill('Authorization: Required. ')],
    ['refused cookie values', `cookie: ${fill('a small file ')}`],
    ['refused JWT look-alikes', fill('eyJub3QganNvbg.')],
    ['slack', fill('xoxb-1')],
    ['signatures', fill('?sig=')],
    ['azure', fill('AccountKey=')],
    ['hint soup', fill('eyJ sk- ghp_ glpat- xoxb- AKIA AIza :// password= Bearer Basic cookie: --token ?sig= platform_ ')],
  ];

  it.each(adversarial)('a megabyte of %s finishes quickly', (_name, input) => {
    const started = performance.now();
    const result = redact(input);
    expect(typeof result.value).toBe('string');
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it('redacts a 1,000-event envelope quickly', () => {
    const events = Array.from({ length: 1000 }, (_, i) => ({
      id: `evt_${i}`,
      at: '2025-01-02T03:04:05.678Z',
      kind: i % 2 === 0 ? 'tool.call' : 'message',
      data: {
        tool: 'shell',
        args: { command: i % 10 === 0 ? `curl -H "Authorization: Bearer ${jwt}" https://api.example.com` : 'ls -la /home/user/project' },
        output: 'total 24\ndrwxr-xr-x  5 user user 4096 Jan  2 03:04 .\n-rw-r--r--  1 user user  220 Jan  2 03:04 README.md',
        tokens: { input: 1234, output: 567 },
        model: 'claude-sonnet',
        tags: ['a', 'b', 'c'],
      },
    }));
    const started = performance.now();
    const result = redact({ schemaVersion: 1, events });
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(result.count).toBe(100);
    expect(result.kinds).toEqual(['jwt']);
  });
});
