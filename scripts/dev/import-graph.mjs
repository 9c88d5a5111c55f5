// Draws the import graph of the service's code (src/, adapters/, policies/) and lists the arrows
// that run the wrong way between layers: the same walls eslint.config.js enforces with
// import-x/no-restricted-paths, counted here so the figure can be reproduced.
//
// Usage: node scripts/dev/import-graph.mjs            summary and the wrong-way arrows
//        node scripts/dev/import-graph.mjs --edges    every file-to-file arrow, one a line
//        node scripts/dev/import-graph.mjs --dot      the layer graph for graphviz (dot -Tsvg)
//        node scripts/dev/import-graph.mjs --json     everything, machine-readable
// Exits 1 when an arrow runs the wrong way.
//
// Type-only imports count: a type import still ties one layer to another's shape.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const ROOTS = ['src', 'adapters', 'policies'];

function walk(directory) {
  const files = [];
  for (const name of readdirSync(directory)) {
    const path = join(directory, name);
    if (statSync(path).isDirectory()) files.push(...walk(path));
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) files.push(path);
  }
  return files;
}

/** The layer a file belongs to: a folder of src/ (each module on its own), adapters, policies, or a file at the top of src/. */
function layerOf(file) {
  const parts = file.split('/');
  if (parts[0] !== 'src') return parts[0];
  if (parts[1] === 'modules') return `modules/${parts[2]}`;
  if (parts[1] === 'config.ts') return 'config';
  if (parts.length === 2) return `src/${parts[1].replace(/\.ts$/, '')}`;
  return parts[1];
}

/** Every module specifier a file names: imports, re-exports, import() calls and import('…') types. */
function specifiersOf(path) {
  const source = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
  const found = [];
  const visit = (node) => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      let typeOnly = Boolean(node.isTypeOnly ?? node.importClause?.isTypeOnly);
      const bindings = node.importClause?.namedBindings ?? node.exportClause;
      if (!typeOnly && node.importClause && !node.importClause.name && bindings && ts.isNamedImports(bindings) && bindings.elements.length > 0) {
        typeOnly = bindings.elements.every((element) => element.isTypeOnly);
      }
      found.push({ specifier: node.moduleSpecifier.text, typeOnly, line: source.getLineAndCharacterOfPosition(node.getStart()).line + 1 });
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0] && ts.isStringLiteral(node.arguments[0])) {
      found.push({ specifier: node.arguments[0].text, typeOnly: false, line: source.getLineAndCharacterOfPosition(node.getStart()).line + 1 });
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      found.push({ specifier: node.argument.literal.text, typeOnly: true, line: source.getLineAndCharacterOfPosition(node.getStart()).line + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function resolveSpecifier(from, specifier) {
  if (!specifier.startsWith('.')) return undefined;
  const target = resolve(dirname(from), specifier).replace(/\.js$/, '.ts');
  try {
    if (statSync(target).isFile()) return target;
  } catch {
    // a directory import or a missing file: tried below
  }
  for (const candidate of [`${target}.ts`, join(target, 'index.ts')]) {
    try {
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // next candidate
    }
  }
  return undefined;
}

/**
 * The walls, in the order eslint.config.js states them. Each returns a reason when an arrow from
 * one file to another breaks it.
 */
const WALLS = [
  { name: 'http ↛ modules', breaks: (from, to) => from.startsWith('src/http/') && to.startsWith('src/modules/') },
  { name: 'auth ↛ modules', breaks: (from, to) => from.startsWith('src/auth/') && to.startsWith('src/modules/') },
  { name: 'adapters ↛ http, modules', breaks: (from, to) => from.startsWith('adapters/') && (to.startsWith('src/http/') || to.startsWith('src/modules/')) },
  { name: 'policies ↛ http, modules', breaks: (from, to) => from.startsWith('policies/') && (to.startsWith('src/http/') || to.startsWith('src/modules/')) },
  { name: 'modules ↛ config', breaks: (from, to) => from.startsWith('src/modules/') && (to === 'src/config.ts' || to.startsWith('src/config/')) },
  {
    name: 'shared types and ports ↛ modules, http, auth, adapters, policies',
    breaks: (from, to) =>
      /^src\/(domain|identity|state|mail|util)\/|^src\/(readiness|errors|error-codes)\.ts$/.test(from) &&
      /^src\/(modules|http|auth)\/|^(adapters|policies)\//.test(to),
  },
  {
    name: "module ↛ another module's store",
    breaks: (from, to) => from.startsWith('src/modules/') && to.startsWith('src/modules/') && layerOf(from) !== layerOf(to) && /\/store\.ts$/.test(to),
  },
  {
    name: 'signin ↔ devices',
    breaks: (from, to) => (layerOf(from) === 'modules/signin' && layerOf(to) === 'modules/devices') || (layerOf(from) === 'modules/devices' && layerOf(to) === 'modules/signin'),
  },
];

const files = ROOTS.flatMap((directory) => walk(join(root, directory))).sort();
const edges = [];
for (const path of files) {
  const from = relative(root, path);
  for (const { specifier, typeOnly, line } of specifiersOf(path)) {
    const target = resolveSpecifier(path, specifier);
    if (!target) continue;
    const to = relative(root, target);
    if (to.startsWith('..') || to.startsWith('node_modules')) continue;
    edges.push({ from, to, line, typeOnly });
  }
}

const crossLayer = edges.filter((edge) => layerOf(edge.from) !== layerOf(edge.to));
const wrong = [];
for (const edge of edges) {
  for (const wall of WALLS) if (wall.breaks(edge.from, edge.to)) wrong.push({ ...edge, wall: wall.name });
}

const layerEdges = new Map();
for (const edge of crossLayer) {
  const key = `${layerOf(edge.from)}\t${layerOf(edge.to)}`;
  layerEdges.set(key, (layerEdges.get(key) ?? 0) + 1);
}

const describe = (edge) => `${edge.from}:${edge.line} → ${edge.to}${edge.typeOnly ? ' (type only)' : ''}`;
const mode = process.argv[2];
if (mode === '--json') {
  console.log(JSON.stringify({ files: files.length, edges, crossLayer: crossLayer.length, wrong }, null, 2));
} else if (mode === '--edges') {
  for (const edge of edges) console.log(describe(edge));
} else if (mode === '--dot') {
  const wrongLayers = new Set(wrong.map((edge) => `${layerOf(edge.from)}\t${layerOf(edge.to)}`));
  console.log('digraph imports {\n  rankdir=LR;\n  node [shape=box, fontsize=10];');
  for (const [key, count] of [...layerEdges].sort()) {
    const [from, to] = key.split('\t');
    console.log(`  "${from}" -> "${to}" [label="${count}"${wrongLayers.has(key) ? ', color=red, fontcolor=red' : ''}];`);
  }
  console.log('}');
} else {
  console.log(`${files.length} files, ${edges.length} import arrows, ${crossLayer.length} between layers (${layerEdges.size} layer pairs)`);
  console.log(`${wrong.length} run the wrong way${wrong.length ? ':' : ''}`);
  for (const wall of WALLS) {
    const breaking = wrong.filter((edge) => edge.wall === wall.name);
    console.log(`  ${wall.name}: ${breaking.length}`);
    for (const edge of breaking) console.log(`    ${describe(edge)}`);
  }
}
process.exitCode = wrong.length > 0 ? 1 : 0;
