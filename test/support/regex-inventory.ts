/**
 * Every regular expression the service's code builds, found mechanically, for the ReDoS check
 * (test/unit/regexes.test.ts runs this in a child process: it replaces the global RegExp).
 *
 * Where they come from:
 * - `literal`: every regex literal in src/, adapters/ and policies/, and every `RegExp(...)` call
 *   whose arguments are string literals, read with the TypeScript compiler API;
 * - `built`: every RegExp constructed while this process imports each of those modules and builds
 *   the app for both deployments (which compiles every route's schemas, so ajv's `pattern`s and
 *   the router's path matchers are among them), recorded by a RegExp constructor that notes each
 *   construction and the first frame of the repository's code that asked for it: patterns
 *   assembled at run time are here as the engine receives them;
 * - `export`: RegExp values reachable from each module's exports;
 * - `schema`: the `pattern` of every schema the routes declare, and the regexes behind each
 *   string `format` they name (ajv-formats: `email`, `uri`, `date-time`…).
 *
 * Besides the regexes, it lists every `RegExp(...)` call site of the repository's code whose
 * arguments are not literals (`dynamicSites`), and the sites the constructor saw (`observedSites`):
 * a run-time pattern built only inside a request would escape the `built` collection, so the
 * test asks that every such site run here (build it when the module loads, as every one does now).
 *
 * Prints one JSON document on stdout.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import ts from 'typescript';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CODE_FOLDERS = ['src', 'adapters', 'policies'];

export interface FoundRegex {
  source: string;
  flags: string;
  /** Where it was found: `file:line` and how (`literal`, `built`, `export`, `schema`). */
  origins: string[];
}

export interface Inventory {
  regexes: FoundRegex[];
  dynamicSites: string[];
  observedSites: string[];
  /** Modules not imported because importing runs them (an entry point): their literals still count. */
  entryPoints: string[];
  files: number;
}

const NativeRegExp = RegExp;
const found = new Map<string, FoundRegex>();
const observedSites = new Set<string>();
let ourFiles = new Set<string>();

function note(source: string, flags: string, origin: string): void {
  const key = `/${source}/${flags}`;
  const entry = found.get(key) ?? { source, flags, origins: [] };
  if (!entry.origins.includes(origin) && entry.origins.length < 5) entry.origins.push(origin);
  found.set(key, entry);
}

/** `file:line` of the first frame in the repository's code (not tests, not node_modules), and whether it is the constructor's caller. */
function callerOf(stack: string): { site: string; direct: boolean } | undefined {
  const frames = stack.split('\n').slice(1);
  const self = fileURLToPath(import.meta.url);
  // The constructor's caller is the first frame past this file's own (record, the proxy's trap).
  const first = frames.findIndex((frame) => !frame.includes(self));
  for (const [index, frame] of frames.entries()) {
    if (index < first) continue;
    const at = /^at (?:[^(]*\()?(?:file:\/\/)?(\/[^():]*):(\d+):\d+\)?$/.exec(frame.trim());
    if (!at) continue;
    // Only the repository's own files count (a library's source map may name a path that looks like one).
    const file = relative(ROOT, at[1]!);
    if (!ourFiles.has(file)) continue;
    return { site: `${file}:${at[2]}`, direct: index === first };
  }
  return undefined;
}

function record(made: RegExp): void {
  const caller = callerOf(new Error().stack ?? '');
  if (!caller) return; // a library's own regex, built for itself
  if (caller.direct) observedSites.add(caller.site);
  note(made.source, made.flags, `${caller.site} (built${caller.direct ? '' : ', through a library'})`);
}

/** RegExp as every module of this process sees it, noting each construction. */
function installRecorder(): void {
  Error.stackTraceLimit = 80;
  globalThis.RegExp = new Proxy(NativeRegExp, {
    construct(target, args: [string | RegExp, string?], newTarget) {
      const made = Reflect.construct(target, args, newTarget === globalThis.RegExp ? target : newTarget) as RegExp;
      record(made);
      return made;
    },
    apply(target, thisArg, args: [string | RegExp, string?]) {
      const made: RegExp = Reflect.apply(target, thisArg, args);
      record(made);
      return made;
    },
  });
}

function codeFiles(): string[] {
  return CODE_FOLDERS.flatMap((folder) => readdirSync(join(ROOT, folder), { recursive: true, encoding: 'utf8' }).map((file) => `${folder}/${file}`))
    .filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'))
    .sort();
}

const isLiteralText = (node: ts.Node): node is ts.StringLiteral | ts.NoSubstitutionTemplateLiteral => ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node);

/** Whether importing the module runs something: a top-level `await`, or a top-level `void call()` (src/main.ts). */
function runsWhenImported(file: ts.SourceFile): boolean {
  let runs = false;
  const visit = (node: ts.Node): void => {
    if (runs || ts.isFunctionLike(node) || ts.isClassLike(node)) return;
    if (ts.isAwaitExpression(node) || (ts.isExpressionStatement(node) && ts.isVoidExpression(node.expression) && ts.isCallExpression(node.expression.expression))) runs = true;
    else ts.forEachChild(node, visit);
  };
  for (const statement of file.statements) visit(statement);
  return runs;
}

/** Regex literals and literal `RegExp(...)` calls; the other `RegExp(...)` calls as dynamic sites. */
function readSource(path: string, dynamicSites: string[]): ts.SourceFile {
  const file = ts.createSourceFile(path, readFileSync(join(ROOT, path), 'utf8'), ts.ScriptTarget.Latest, true);
  const lineOf = (node: ts.Node) => file.getLineAndCharacterOfPosition(node.getStart(file)).line + 1;
  const visit = (node: ts.Node): void => {
    if (node.kind === ts.SyntaxKind.RegularExpressionLiteral) {
      const text = node.getText(file);
      const slash = text.lastIndexOf('/');
      note(text.slice(1, slash), text.slice(slash + 1), `${path}:${lineOf(node)} (literal)`);
    } else if ((ts.isNewExpression(node) || ts.isCallExpression(node)) && ts.isIdentifier(node.expression) && node.expression.text === 'RegExp') {
      const args = node.arguments ?? ts.factory.createNodeArray();
      if (args.length >= 1 && args.every(isLiteralText)) {
        const made = new NativeRegExp(args[0]!.text, args[1]?.text ?? '');
        note(made.source, made.flags, `${path}:${lineOf(node)} (literal)`);
      } else {
        dynamicSites.push(`${path}:${lineOf(node)}`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return file;
}

/** RegExp values reachable from a module's exports (objects, arrays, maps and sets, a few levels down). */
function walkExports(value: unknown, origin: string, depth = 0, seen = new Set<unknown>()): void {
  if (value === null || typeof value !== 'object' || seen.has(value) || depth > 8) return;
  seen.add(value);
  if (value instanceof NativeRegExp) {
    note(value.source, value.flags, origin);
    return;
  }
  // Plain data only: an instance of a library's class (an Ajv, a DataSource) holds the library's regexes, not ours.
  const prototype = Object.getPrototypeOf(value) as unknown;
  const plain = prototype === Object.prototype || prototype === null || value instanceof Map || value instanceof Set || Array.isArray(value);
  if (!plain) return;
  const children = value instanceof Map ? [...value.values(), ...value.keys()] : value instanceof Set || Array.isArray(value) ? [...value] : Object.values(value);
  for (const child of children) walkExports(child, origin, depth + 1, seen);
}

/** The `pattern`s and `format`s of a schema, at any depth. */
function walkSchema(schema: unknown, origin: string, formats: Set<string>, seen = new Set<unknown>()): void {
  if (schema === null || typeof schema !== 'object' || seen.has(schema)) return;
  seen.add(schema);
  const node = schema as Record<string, unknown>;
  if (typeof node.pattern === 'string') note(new NativeRegExp(node.pattern, 'u').source, 'u', `${origin} (schema)`);
  if (typeof node.format === 'string') formats.add(node.format);
  for (const child of Object.values(node)) walkSchema(child, origin, formats, seen);
}

async function inventory(): Promise<Inventory> {
  const files = codeFiles();
  ourFiles = new Set(files);
  installRecorder();
  const dynamicSites: string[] = [];
  const entryPoints: string[] = [];
  const modules: string[] = [];
  for (const path of files) {
    const source = readSource(path, dynamicSites);
    if (runsWhenImported(source)) entryPoints.push(path);
    else modules.push(path);
  }
  for (const path of modules) {
    const namespace = (await import(pathToFileURL(join(ROOT, path)).href)) as Record<string, unknown>;
    walkExports(namespace, `${path} (export)`);
  }

  // The app, for each deployment: every route's schemas compiled, the routers' paths matched.
  const { loadConfig } = await import('../../src/config.js');
  const { buildApp } = await import('../../src/app.js');
  const { createDataSource } = await import('../../src/db/data-source.js');
  const { createLogger } = await import('../../src/logger.js');
  const { ManualClock } = await import('../../src/util/clock.js');
  const { bodyAjv } = await import('../../src/http/schema.js');
  const formats = new Set<string>();
  for (const env of [{ PLATFORM_DEPLOYMENT: 'self-hosted' }, { PLATFORM_DEPLOYMENT: 'cloud', PLATFORM_BASE_URL: 'https://platform.test', AUTH_CONSOLE_REDIRECT_URIS: 'https://console.test/cb' }]) {
    const config = loadConfig({ ...env, DATABASE_URL: 'sqlite::memory:', LOG_LEVEL: 'silent' });
    const dataSource = createDataSource(config.database);
    const platform = buildApp({ config, dataSource, clock: new ManualClock(Date.now()), logger: createLogger('silent') });
    for (const route of platform.registry.routes) {
      const { schemas, responses } = route as unknown as { schemas?: unknown; responses?: unknown };
      walkSchema(schemas, `${route.operationId} request`, formats);
      walkSchema(responses, `${route.operationId} answer`, formats);
    }
  }
  for (const format of formats) {
    const definition = bodyAjv.formats[format] as unknown;
    const regex = definition instanceof NativeRegExp ? definition : (definition as { validate?: unknown } | undefined)?.validate;
    if (regex instanceof NativeRegExp) note(regex.source, regex.flags, `format ${format} (ajv-formats)`);
  }
  return {
    regexes: [...found.values()],
    dynamicSites: [...new Set(dynamicSites)],
    observedSites: [...observedSites],
    entryPoints,
    files: files.length,
  };
}

process.stdout.write(`${JSON.stringify(await inventory())}\n`);
process.exit(0);
