import { CONFIG_VARIABLES, type ConfigVariable } from '../../src/config.js';

/**
 * What the configuration's declarations (src/config/variables.ts) generate: the configuration
 * table of docs/operations/configuration.md and the env sections (`config`, `secrets`) of the Helm chart's
 * values.schema.json. test/deploy/config-variables.test.ts fails when either drifts, and rewrites
 * them with UPDATE_DOCS=1 and UPDATE_CHART=1.
 */

/** Where the table is: the operators' configuration page. */
export const CONFIGURATION_DOC = 'docs/operations/configuration.md';

export const README_START = '<!-- config-variables:start (generated from src/config/variables.ts by test/deploy/config-variables.test.ts; UPDATE_DOCS=1 rewrites it) -->';
export const README_END = '<!-- config-variables:end -->';

type JsonSchema = Record<string, unknown>;

/** A table cell: one line, no column separator. */
function cell(text: string): string {
  return text.replaceAll('|', '\\|').replaceAll('\n', ' ');
}

/** The default column: the default, or what applies without one. */
export function defaultCell(variable: ConfigVariable): string {
  if (variable.default === undefined) return variable.defaultNote ?? 'none';
  return `\`${variable.default}\`${variable.defaultNote ? ` (${variable.defaultNote})` : ''}`;
}

export function configurationTable(): string {
  const rows = CONFIG_VARIABLES.map(
    (variable) =>
      `| \`${variable.name}\` | ${cell(defaultCell(variable))} | ${cell(variable.values ?? '')} | ${variable.secret ? '**Secret.** ' : ''}${cell(variable.description)} |`,
  );
  return [README_START, '| variable | default | values | meaning |', '|---|---|---|---|', ...rows, README_END].join('\n');
}

/** A description as plain text: Markdown links to the docs' sections lose their targets. */
function plain(markdown: string): string {
  let text = '';
  let at = 0;
  for (;;) {
    const open = markdown.indexOf('[', at);
    const close = open < 0 ? -1 : markdown.indexOf('](', open);
    const end = close < 0 ? -1 : markdown.indexOf(')', close);
    if (end < 0 || markdown.slice(open + 1, close).includes('[')) {
      if (open < 0 || end < 0) return text + markdown.slice(at);
      text += markdown.slice(at, open + 1);
      at = open + 1;
      continue;
    }
    text += markdown.slice(at, open) + markdown.slice(open + 1, close);
    at = end + 1;
  }
}

/**
 * The chart's `config` (ConfigMap) and `secrets` (Secret) properties: every secret goes to
 * `secrets`; any other variable to `config`, unless the chart sets it itself (`setByChart`: the
 * container port, migrations at start), when it is no value at all.
 */
export function chartEnvSchema(setByChart: ReadonlySet<string>): { config: Record<string, JsonSchema>; secrets: Record<string, JsonSchema> } {
  const config: Record<string, JsonSchema> = {};
  const secrets: Record<string, JsonSchema> = {};
  for (const variable of CONFIG_VARIABLES) {
    const schema = { ...variable.json, description: plain(variable.description) };
    if (variable.secret) secrets[variable.name] = schema;
    else if (!setByChart.has(variable.name)) config[variable.name] = schema;
  }
  return { config, secrets };
}

/** JSON on one line, spaced as values.schema.json writes its entries. */
function inline(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(inline).join(', ')}]`;
  if (value !== null && typeof value === 'object') {
    return `{ ${Object.entries(value)
      .map(([key, entry]) => `${JSON.stringify(key)}: ${inline(entry)}`)
      .join(', ')} }`;
  }
  return JSON.stringify(value);
}

/** The index just past the value (object or array) that opens at `open`, strings skipped. */
function closing(text: string, open: number): number {
  let depth = 0;
  for (let index = open; index < text.length; index++) {
    const char = text[index];
    if (char === '"') {
      for (index++; text[index] !== '"'; index++) if (text[index] === '\\') index++;
    } else if (char === '{' || char === '[') depth++;
    else if (char === '}' || char === ']') {
      depth--;
      if (depth === 0) return index + 1;
    }
  }
  throw new Error('unbalanced JSON');
}

/**
 * values.schema.json with the `properties` of its top-level `config` and `secrets` replaced, one
 * variable a line; the rest of the file is left as it is written.
 */
export function withChartEnvSchema(text: string, sections: Record<'config' | 'secrets', Record<string, JsonSchema>>): string {
  let result = text;
  for (const section of ['config', 'secrets'] as const) {
    const start = result.indexOf(`\n    "${section}": {`);
    if (start < 0) throw new Error(`values.schema.json has no top-level "${section}"`);
    const propertiesKey = result.indexOf('"properties": {', start);
    if (propertiesKey < 0 || propertiesKey > closing(result, result.indexOf('{', start + 1))) throw new Error(`"${section}" has no properties`);
    const open = result.indexOf('{', propertiesKey);
    const end = closing(result, open);
    const indent = ' '.repeat(8);
    const body = Object.entries(sections[section])
      .map(([name, schema]) => `${indent}${JSON.stringify(name)}: ${inline(schema)}`)
      .join(',\n');
    result = `${result.slice(0, open)}{\n${body}\n      }${result.slice(end)}`;
  }
  return result;
}
