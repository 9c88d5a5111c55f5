import { SVG_NAMESPACE, XMLNS_NAMESPACE, type XmlAttribute, type XmlDocument, type XmlElement, type XmlNode } from './parse.js';
import { SvgRefusal } from './refusal.js';
import { EDITOR_NAMESPACES, METADATA_NAMESPACES, NORMALISED_KINDS, type NormalisedKind } from './rules.js';

/**
 * The fixed normalisation, on the tree of the strict parse, before any rule is checked. It
 * removes only what no browser draws or runs, in any of the ways a picture is shown:
 * - `doctype`: the standard SVG 1.0 or 1.1 DOCTYPE (the prescan refuses every other one);
 * - `comment`: XML comments;
 * - `processing-instruction`: processing instructions (`<?xml-stylesheet?>` included; the XML
 *   declaration is not one and stays);
 * - `metadata`: `<metadata>` elements of the SVG namespace, whatever their prefix, with what they
 *   hold, and elements and attributes of the metadata vocabularies (RDF, Dublin Core, Creative
 *   Commons, XMP), recognised by namespace URI;
 * - `editor-data`: elements (with what they hold) and attributes in the namespaces of drawing
 *   programs (Inkscape, Sodipodi, Illustrator, Sketch, Figma, draw.io, Serif, …), recognised by
 *   namespace URI, never by prefix;
 * - `namespace-declaration`: a declaration of the SVG namespace under a prefix (`xmlns:svg`),
 *   and a declaration of an editor or metadata namespace, once nothing uses it.
 *
 * A namespace declaration is removed only when no name left in its element (the element, its
 * attributes, its descendants) uses its prefix, attribute values read as names included (SMIL
 * `attributeName="x:href"`). When one does, removing it would change what that name means, and
 * the picture is refused instead. Nothing else is ever changed: everything dangerous is refused
 * afterwards by the rules, as it was sent.
 *
 * White space next to a removed element or comment goes with it (only outside text content, where
 * it is not drawn), so a tidy document stays tidy. An explicit stack, no recursion.
 */

export interface Normalised {
  document: XmlDocument;
  /** What was removed, in the fixed order of NORMALISED_KINDS. */
  removed: NormalisedKind[];
}

/** Elements whose text is drawn or read: white space in them is never touched. */
const TEXT_CONTENT = new Set(['text', 'tspan', 'textPath', 'title', 'desc', 'style', 'a']);

/** Attributes whose value a browser reads as a qualified name (SMIL's target attribute). */
const NAME_VALUED_ATTRIBUTES = new Set(['attributeName']);

function removalOf(element: XmlElement): NormalisedKind | undefined {
  if (element.uri === SVG_NAMESPACE && element.local === 'metadata') return 'metadata';
  if (METADATA_NAMESPACES.has(element.uri)) return 'metadata';
  if (EDITOR_NAMESPACES.has(element.uri)) return 'editor-data';
  return undefined;
}

function removableDeclaration(attribute: XmlAttribute): boolean {
  if (attribute.uri !== XMLNS_NAMESPACE || attribute.prefix !== 'xmlns') return false;
  return attribute.value === SVG_NAMESPACE || EDITOR_NAMESPACES.has(attribute.value) || METADATA_NAMESPACES.has(attribute.value);
}

/** The prefixes among `watched` (all when undefined) that the element's own names use (its name,
 * its attributes' names, name-valued attributes), added to `into`. */
function prefixesUsed(element: XmlElement, watched: ReadonlySet<string> | undefined, into: Set<string>): void {
  if (element.prefix && (!watched || watched.has(element.prefix))) into.add(element.prefix);
  for (const attribute of element.attributes) {
    if (attribute.prefix && attribute.prefix !== 'xmlns' && (!watched || watched.has(attribute.prefix))) into.add(attribute.prefix);
    if (NAME_VALUED_ATTRIBUTES.has(attribute.name)) {
      const value = attribute.value.trim();
      const colon = value.indexOf(':');
      if (colon > 0 && (!watched || watched.has(value.slice(0, colon)))) into.add(value.slice(0, colon));
    }
  }
}

const isWhiteSpace = (node: XmlNode | undefined): boolean => node?.type === 'text' && node.value.trim() === '';

const isRemoved = (child: XmlNode): boolean => child.type === 'comment' || child.type === 'instruction' || (child.type === 'element' && removalOf(child) !== undefined);

/** Removes comments, processing instructions, metadata and editor elements from one element's children. */
function pruneChildren(element: XmlElement, removed: Set<NormalisedKind>): void {
  // Most elements lose nothing: their children stay as they are.
  if (!element.children.some(isRemoved)) return;
  const kept: XmlNode[] = [];
  const tidy = !TEXT_CONTENT.has(element.local);
  for (const child of element.children) {
    let removal: NormalisedKind | undefined;
    if (child.type === 'comment') removal = 'comment';
    else if (child.type === 'instruction') removal = 'processing-instruction';
    else if (child.type === 'element') removal = removalOf(child);
    if (removal === undefined) {
      const last = kept[kept.length - 1];
      // Text on both sides of a removed node is one text again.
      if (child.type === 'text' && last?.type === 'text') last.value += child.value;
      else kept.push(child.type === 'text' ? { type: 'text', value: child.value } : child);
      continue;
    }
    removed.add(removal);
    if (tidy && isWhiteSpace(kept[kept.length - 1])) kept.pop();
  }
  element.children = kept;
}

/** Removes editor and metadata attributes, and the namespace declarations normalisation drops
 * (answered, or undefined when none was). Most elements lose nothing: their attributes stay as
 * they are, without a copy. */
function pruneAttributes(element: XmlElement, removed: Set<NormalisedKind>): XmlAttribute[] | undefined {
  const attributes = element.attributes;
  let first = 0;
  while (first < attributes.length && !isPruned(attributes[first] as XmlAttribute)) first += 1;
  if (first === attributes.length) return undefined;
  const kept = attributes.slice(0, first);
  let dropped: XmlAttribute[] | undefined;
  for (let index = first; index < attributes.length; index++) {
    const attribute = attributes[index] as XmlAttribute;
    if (EDITOR_NAMESPACES.has(attribute.uri)) removed.add('editor-data');
    else if (METADATA_NAMESPACES.has(attribute.uri)) removed.add('metadata');
    else if (removableDeclaration(attribute)) (dropped ??= []).push(attribute);
    else kept.push(attribute);
  }
  element.attributes = kept;
  return dropped;
}

/** Whether pruneAttributes removes an attribute. An unprefixed one (no namespace: most) never is:
 * the editor and metadata namespaces and a declaration's are never ''. */
const isPruned = (attribute: XmlAttribute): boolean =>
  attribute.uri !== '' && (EDITOR_NAMESPACES.has(attribute.uri) || METADATA_NAMESPACES.has(attribute.uri) || removableDeclaration(attribute));

/** `/svg/g[2]/rect[1]`, as the rules name places (one-based among same-named siblings). */
function pathOf(element: XmlElement, root: XmlElement): string {
  // Only for a message: the parents are found by walking the tree once.
  const parents = new Map<XmlElement, XmlElement>();
  const stack: XmlElement[] = [root];
  while (stack.length > 0) {
    const at = stack.pop() as XmlElement;
    for (const child of at.children) {
      if (child.type !== 'element') continue;
      parents.set(child, at);
      stack.push(child);
    }
  }
  const labels: string[] = [];
  for (let at: XmlElement | undefined = element; at; ) {
    const parent = parents.get(at);
    if (!parent) {
      labels.push(at.name);
      break;
    }
    let count = 0;
    for (const sibling of parent.children) {
      if (sibling.type === 'element' && sibling.name === at.name) count += 1;
      if (sibling === at) break;
    }
    labels.push(`${at.name}[${count}]`);
    at = parent;
  }
  return `/${labels.reverse().join('/')}`;
}

export function normalise(document: XmlDocument): Normalised {
  const removed = new Set<NormalisedKind>();
  if (document.doctype !== undefined) removed.add('doctype');
  for (const node of document.outside) removed.add(node.type === 'comment' ? 'comment' : 'processing-instruction');
  const root = document.root;
  const rootRemoval = removalOf(root);
  if (rootRemoval) throw new SvgRefusal('invalid_svg', 'the document must be one <svg> element', '/');

  // First pass, top down: prune every element's children and attributes, noting the namespace
  // declarations it dropped and every prefix a remaining name uses. Second pass (only when a
  // dropped declaration's prefix is used by some remaining name), bottom up: the dropped prefixes
  // each subtree still uses, against the declarations dropped at its top. When no remaining name
  // uses a dropped prefix, that pass could refuse nothing, and every dropped declaration goes.
  const dropped = new Map<XmlElement, XmlAttribute[]>();
  const watched = new Set<string>();
  const usedAnywhere = new Set<string>();
  const stack: XmlElement[] = [root];
  while (stack.length > 0) {
    const element = stack.pop() as XmlElement;
    pruneChildren(element, removed);
    const declarations = pruneAttributes(element, removed);
    if (declarations !== undefined) {
      dropped.set(element, declarations);
      for (const declaration of declarations) watched.add(declaration.local);
    }
    prefixesUsed(element, undefined, usedAnywhere);
    for (const child of element.children) if (child.type === 'element') stack.push(child);
  }
  if (dropped.size > 0 && ![...watched].some((prefix) => usedAnywhere.has(prefix))) {
    removed.add('namespace-declaration');
  } else if (dropped.size > 0) {
    // The first pass's order again (the tree no longer changes, so the same walk visits the same
    // elements in the same order).
    const order: XmlElement[] = [];
    stack.push(root);
    while (stack.length > 0) {
      const element = stack.pop() as XmlElement;
      order.push(element);
      for (const child of element.children) if (child.type === 'element') stack.push(child);
    }
    const none: ReadonlySet<string> = new Set();
    const scratch = new Set<string>();
    const used = new Map<XmlElement, ReadonlySet<string>>();
    for (let index = order.length - 1; index >= 0; index--) {
      const element = order[index] as XmlElement;
      let prefixes: Set<string> | undefined;
      scratch.clear();
      prefixesUsed(element, watched, scratch);
      if (scratch.size > 0) prefixes = new Set(scratch);
      for (const child of element.children) {
        if (child.type !== 'element') continue;
        const below = used.get(child);
        used.delete(child);
        if (!below || below.size === 0) continue;
        prefixes ??= new Set();
        for (const prefix of below) prefixes.add(prefix);
      }
      used.set(element, prefixes ?? none);
      for (const declaration of dropped.get(element) ?? []) {
        if (prefixes?.has(declaration.local)) {
          throw new SvgRefusal(
            'unsafe_svg',
            `removing the namespace declaration ${declaration.name}="${declaration.value}" would change what the prefix ${declaration.local}: means in what remains; declare it only where it is needed, or not at all`,
            `${pathOf(element, root)}/@${declaration.name}`,
          );
        }
        removed.add('namespace-declaration');
      }
    }
  }

  document.doctype = undefined;
  document.outside = [];
  return { document, removed: NORMALISED_KINDS.filter((kind) => removed.has(kind)) };
}
