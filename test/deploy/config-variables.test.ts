import { beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import { renderChart } from '../../scripts/chart.mjs';
import { CONFIG_VARIABLES, loadConfig, type ConfigVariable } from '../../src/config.js';
import { chartEnvSchema, CONFIGURATION_DOC, configurationTable, README_END, README_START, withChartEnvSchema } from '../support/config-docs.js';

// One declaration per variable (src/config/variables.ts, listed as CONFIG_VARIABLES) against
// everything that must agree with it: what loadConfig reads, the defaults it applies, the
// configuration table (docs/operations/configuration.md) and the Helm chart. The table and the chart's values.schema.json env sections
// are generated from the declarations (test/support/config-docs.ts): a drift fails here, and
// UPDATE_DOCS=1 or UPDATE_CHART=1 rewrites them. values.yaml is written by hand (its comments
// are the chart README's), and checked against the declarations.

const root = join(import.meta.dirname, '..', '..');
const DOC = join(root, CONFIGURATION_DOC);
/** UPDATE_DOCS=1 (or the older UPDATE_README=1) rewrites the generated table. */
const UPDATE_DOCS = process.env.UPDATE_DOCS === '1' || process.env.UPDATE_README === '1';
const CHART_SCHEMA = join(root, 'charts', 'platform', 'values.schema.json');
const names = CONFIG_VARIABLES.map((variable) => variable.name);
const listed = new Set(names);

/** The variables loadConfig asks an environment for, with these values set. */
function read(env: Record<string, string>): Set<string> {
  const asked = new Set<string>();
  const spy = new Proxy(env, {
    get(target, key) {
      if (typeof key === 'string') asked.add(key);
      return target[key as string];
    },
  });
  loadConfig(spy);
  return asked;
}

/** The `name: X` variables the chart's Deployment sets explicitly, beside its ConfigMap and Secret. */
async function chartSetVariables(): Promise<Set<string>> {
  const result = await renderChart([]);
  if (!result.ok) throw new Error(result.error);
  const deployment = parseAllDocuments(result.manifest)
    .map((document) => document.toJS() as { kind?: string; spec?: { template: { spec: { containers: { env?: { name: string }[] }[] } } } } | null)
    .find((object) => object?.kind === 'Deployment');
  return new Set(deployment!.spec!.template.spec.containers[0]!.env?.map((variable) => variable.name) ?? []);
}

describe('CONFIG_VARIABLES', () => {
  it('names each variable once', () => {
    expect(new Set(names).size).toBe(names.length);
    for (const name of names) expect(name).toMatch(/^[A-Z][A-Z0-9_]*$/);
  });

  it('lists exactly the variables loadConfig reads, on self-hosted and on Cloud (every identity provider enabled)', () => {
    const cloud = { PLATFORM_DEPLOYMENT: 'cloud', PLATFORM_BASE_URL: 'https://api.platform.test' };
    // A provider's endpoints are read only when it is enabled.
    const providers = Object.fromEntries(
      ['GOOGLE', 'MICROSOFT', 'GITHUB', 'FACEBOOK'].flatMap((p) => [[`${p}_CLIENT_ID`, 'id'], [`${p}_CLIENT_SECRET`, 'secret']]),
    );
    const asked = new Set([...read({}), ...read(cloud), ...read({ ...cloud, ...providers })]);
    expect([...asked].filter((name) => !listed.has(name))).toEqual([]);
    expect(names.filter((name) => !asked.has(name))).toEqual([]);
  });

  it('lists every variable name written in src/config.ts (also those read only in some configurations)', () => {
    const source = readFileSync(join(root, 'src', 'config.ts'), 'utf8');
    const code = source.slice(0, source.indexOf('export const CONFIG_VARIABLES'));
    const written = new Set([...code.matchAll(/'([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*)'/g)].map((match) => match[1]!));
    expect([...written].filter((name) => !listed.has(name))).toEqual([]);
  });

  it.each(CONFIG_VARIABLES.filter((variable) => variable.default !== undefined).map((variable) => [variable.name, variable.default!]))(
    'gives %s the default loadConfig applies (%s)',
    (name, value) => {
      expect(loadConfig({ [name]: value })).toEqual(loadConfig({}));
    },
  );

  it("matches the configuration table (docs/operations/configuration.md), defaults included", () => {
    // The page holds the configuration only.
    const section = readFileSync(DOC, 'utf8');
    const rows = new Map([...section.matchAll(/^\| `([A-Z][A-Z0-9_]*)` \| ([^|]*) \|/gm)].map((match) => [match[1]!, match[2]!]));
    expect([...rows.keys()].sort()).toEqual([...names].sort());
    for (const variable of CONFIG_VARIABLES) {
      if (variable.default !== undefined) expect(`${variable.name}: ${rows.get(variable.name)}`).toContain(`\`${variable.default}\``);
    }
  });
});

describe('the generated documentation', () => {
  it("writes the configuration table of docs/operations/configuration.md from the declarations", () => {
    const readme = readFileSync(DOC, 'utf8');
    const start = readme.indexOf(README_START);
    const end = readme.indexOf(README_END);
    expect(start).toBeGreaterThan(readme.indexOf('# Configuration'));
    expect(end).toBeGreaterThan(start);
    const current = readme.slice(start, end + README_END.length);
    const expected = configurationTable();
    if (current !== expected && UPDATE_DOCS) {
      writeFileSync(DOC, readme.slice(0, start) + expected + readme.slice(end + README_END.length));
      return;
    }
    expect(current).toBe(expected);
  });

  it("writes the chart's values.schema.json env sections from the declarations", async () => {
    const text = readFileSync(CHART_SCHEMA, 'utf8');
    const expected = chartEnvSchema(await chartSetVariables());
    const schema = JSON.parse(text) as { properties: Record<'config' | 'secrets', { properties: unknown }> };
    const current = { config: schema.properties.config.properties, secrets: schema.properties.secrets.properties };
    if (JSON.stringify(current) !== JSON.stringify(expected) && process.env.UPDATE_CHART === '1') {
      writeFileSync(CHART_SCHEMA, withChartEnvSchema(text, expected));
      return;
    }
    // Order included: the chart lists the variables as the configuration table does.
    expect(JSON.stringify(current, null, 1)).toBe(JSON.stringify(expected, null, 1));
  });

  it('marks every secret as one in both: a Secret in the chart, and so in the configuration table', () => {
    const readme = readFileSync(DOC, 'utf8');
    const schema = JSON.parse(readFileSync(CHART_SCHEMA, 'utf8')) as { properties: Record<'config' | 'secrets', { properties: Record<string, unknown> }> };
    const secrets = CONFIG_VARIABLES.filter((variable) => variable.secret).map((variable) => variable.name);
    expect(secrets.length).toBeGreaterThan(5);
    expect(Object.keys(schema.properties.secrets.properties).sort()).toEqual([...secrets].sort());
    for (const variable of CONFIG_VARIABLES) {
      const row = readme.split('\n').find((line) => line.startsWith(`| \`${variable.name}\` |`));
      expect(`${variable.name}: ${String(row?.split(' | ')[3]?.startsWith('**Secret.**'))}`).toBe(`${variable.name}: ${String(variable.secret)}`);
    }
  });
});

describe('the Helm chart', () => {
  const values = parseYaml(readFileSync(join(root, 'charts', 'platform', 'values.yaml'), 'utf8')) as {
    config: Record<string, unknown>;
    secrets: Record<string, unknown>;
  };
  const schema = JSON.parse(readFileSync(join(root, 'charts', 'platform', 'values.schema.json'), 'utf8')) as {
    properties: Record<string, { properties: Record<string, { description?: string }>; additionalProperties: boolean }>;
  };
  let chartSet: Set<string>;
  /** Where the chart deliberately differs from the service's default, and why. */
  const CHART_DEFAULTS: Record<string, string> = {
    // A cluster is never reached as localhost: no organisation is created for it.
    PLATFORM_BOOTSTRAP_LOCALHOST: 'false',
  };

  beforeAll(async () => {
    chartSet = await chartSetVariables();
  });

  it.each(CONFIG_VARIABLES.map((variable): [string, ConfigVariable] => [variable.name, variable]))('has a place for %s', (name, variable) => {
    if (chartSet.has(name) && !variable.secret) {
      // Set by the chart itself (the container port, migrations in the hook Job): not a value.
      expect(values.config).not.toHaveProperty(name);
      return;
    }
    // A secret lives in the Secret (or the existing one), anything else in the ConfigMap; each in
    // values.yaml (documented, in the chart README) and in values.schema.json.
    const section = variable.secret ? 'secrets' : 'config';
    const other = variable.secret ? 'config' : 'secrets';
    expect(values[section]).toHaveProperty(name);
    expect(values[other]).not.toHaveProperty(name);
    expect(schema.properties[section]!.properties[name]?.description).toBeTruthy();
    expect(schema.properties[other]!.properties).not.toHaveProperty(name);
  });

  it('knows no setting the service does not read, and refuses unknown ones', () => {
    for (const section of ['config', 'secrets'] as const) {
      expect(Object.keys(values[section]).filter((name) => !listed.has(name))).toEqual([]);
      expect(Object.keys(schema.properties[section]!.properties).sort()).toEqual(Object.keys(values[section]).sort());
      expect(schema.properties[section]!.additionalProperties).toBe(false);
    }
  });

  it('starts from the service defaults, except where it says why not', () => {
    for (const variable of CONFIG_VARIABLES) {
      const value = variable.secret ? values.secrets[variable.name] : values.config[variable.name];
      // Unset (set by the chart, or empty: the service's default applies).
      if (value === undefined || value === '') continue;
      const expected = CHART_DEFAULTS[variable.name] ?? variable.default;
      expect(`${variable.name}=${String(value)}`).toBe(`${variable.name}=${expected}`);
    }
  });
});
