import { checkDeclarations, checkStyleValue, checkStylesheet } from './css.js';
import { SVG_NAMESPACE, type XmlAttribute, type XmlDocument, type XmlElement } from './parse.js';
import { dataMediaType, referenceProblem, type Allowed } from './references.js';
import { SvgRefusal, shown } from './refusal.js';
import {
  ALLOWED_ELEMENTS,
  ANIMATABLE_ATTRIBUTES,
  ANIMATION_ATTRIBUTES,
  ARIA_ATTRIBUTE,
  CONDITIONAL_ATTRIBUTES,
  CORE_ATTRIBUTES,
  DATA_ATTRIBUTE,
  GEOMETRY_ATTRIBUTES,
  LINK_ATTRIBUTES,
  LINK_TARGETS,
  LONG_VALUE_ATTRIBUTES,
  MAX_ELEMENT_DEPTH,
  MAX_STYLESHEET_LENGTH,
  MAX_VALUE_LENGTH,
  NAMESPACE_DECLARATIONS,
  PRESENTATION_ATTRIBUTES,
  REFERENCE_ATTRIBUTES,
  REFERENCING_ELEMENTS,
  STYLE_TYPES,
  TEXT_ATTRIBUTES,
  TEXT_ONLY_ELEMENTS,
} from './rules.js';


/**
 * The parsed tree against the rules of `rules.ts`, element by element (an explicit stack, no
 * recursion). Answers what the HTML reading must match: every element in document order with
 * its attributes.
 */

export interface ElementSignature {
  name: string;
  uri: string;
  attributes: readonly XmlAttribute[];
  /** The text of a `<style>` (the CSS that was checked). */
  styleText?: string;
  /** Where it is, for a message. */
  path: () => string;
}

interface Frame {
  element: XmlElement;
  parent: Frame | undefined;
  label: string;
  depth: number;
}

const ANIMATION_ELEMENTS = new Set(['animate', 'animateMotion', 'animateTransform', 'set']);

/**
 * `<use>` draws a copy of what it points at, copies can hold further `<use>`s, and so a small
 * picture can ask a browser to draw billions of elements ("xlink laughs"), or loop. The elements
 * a picture would draw, copies included, are counted (each element once, with memory: an explicit
 * stack, no recursion); a loop or more than this many is refused.
 */
const MAX_DRAWN_ELEMENTS = 100_000;

function checkUseExpansion(root: XmlElement, ids: ReadonlyMap<string, XmlElement>): void {
  const drawn = new Map<XmlElement, number>();
  const open = new Set<XmlElement>();
  const targetOf = (element: XmlElement): XmlElement | undefined => {
    if (element.name !== 'use') return undefined;
    const href = element.attributes.find((attribute) => attribute.name === 'href' || attribute.name === 'xlink:href')?.value;
    return href === undefined ? undefined : ids.get(href.trim().slice(1));
  };
  const stack: { element: XmlElement; expanded: boolean }[] = [{ element: root, expanded: false }];
  while (stack.length > 0) {
    const top = stack[stack.length - 1] as { element: XmlElement; expanded: boolean };
    const { element } = top;
    const next = [...element.children.filter((child): child is XmlElement => child.type === 'element')];
    const target = targetOf(element);
    if (target) next.push(target);
    if (!top.expanded) {
      if (drawn.has(element)) {
        stack.pop();
        continue;
      }
      top.expanded = true;
      open.add(element);
      for (const child of next) {
        if (open.has(child)) throw new SvgRefusal('unsafe_svg', `<use> references form a loop (through #${idOf(target ?? child) ?? '?'})`, '/svg');
        if (!drawn.has(child)) stack.push({ element: child, expanded: false });
      }
      continue;
    }
    stack.pop();
    open.delete(element);
    let total = 1;
    for (const child of next) total += drawn.get(child) ?? 0;
    if (total > MAX_DRAWN_ELEMENTS) throw new SvgRefusal('unsafe_svg', `<use> references would draw more than ${MAX_DRAWN_ELEMENTS} elements`, '/svg');
    drawn.set(element, total);
  }
}

const idOf = (element: XmlElement): string | undefined => element.attributes.find((attribute) => attribute.name === 'id')?.value;

function pathOf(frame: Frame): string {
  const labels: string[] = [];
  for (let at: Frame | undefined = frame; at; at = at.parent) labels.push(at.label);
  labels.reverse();
  // A deep path keeps its ends: where it starts and the last few steps.
  if (labels.length > 12) labels.splice(3, labels.length - 9, '…');
  return `/${labels.join('/')}`;
}

function checkAttribute(element: XmlElement, attribute: XmlAttribute, where: () => string): void {
  const { name, value } = attribute;
  const refuse = (reason: string): never => {
    throw new SvgRefusal('unsafe_svg', reason, `${where()}/@${name}`);
  };
  if (name === 'xmlns' || name.startsWith('xmlns:')) {
    const expected = NAMESPACE_DECLARATIONS.get(name);
    if (expected === undefined) refuse(`the namespace declaration ${name} is not allowed (only the SVG and XLink namespaces)`);
    if (value !== expected) refuse(`${name} must be ${shown(expected as string)}, not ${shown(value)}`);
    return;
  }
  if (/^on/i.test(name)) refuse(`the event handler attribute ${name} is not allowed`);
  if (REFERENCE_ATTRIBUTES.has(name)) {
    const kind = REFERENCING_ELEMENTS.get(element.name);
    if (!kind) refuse(`<${element.name}> may not carry ${name}`);
    // A data: image may be as long as the picture; anything else is a short reference.
    if (value.length > MAX_VALUE_LENGTH && dataMediaType(value.trimStart()) === undefined) refuse(`the value of ${name} is longer than ${MAX_VALUE_LENGTH} characters (the limit of an attribute value)`);
    const problem = referenceProblem(value, kind as Allowed);
    if (problem) refuse(`${shown(value)}: ${problem}`);
    return;
  }
  if (value.length > MAX_VALUE_LENGTH && !LONG_VALUE_ATTRIBUTES.has(name)) refuse(`the value of ${name} is longer than ${MAX_VALUE_LENGTH} characters (the limit of an attribute value)`);
  const isAnimation = ANIMATION_ELEMENTS.has(element.name);
  const isLink = element.name === 'a';
  const isFree = DATA_ATTRIBUTE.test(name) || ARIA_ATTRIBUTE.test(name);
  const allowed =
    isFree ||
    CORE_ATTRIBUTES.has(name) ||
    CONDITIONAL_ATTRIBUTES.has(name) ||
    PRESENTATION_ATTRIBUTES.has(name) ||
    GEOMETRY_ATTRIBUTES.has(name) ||
    (isAnimation && ANIMATION_ATTRIBUTES.has(name)) ||
    (isLink && LINK_ATTRIBUTES.has(name));
  if (!allowed) refuse(`the attribute ${name} is not allowed on <${element.name}>`);
  if (isFree) return;
  if (name === 'style') {
    checkDeclarations(value, `${where()}/@style`);
    return;
  }
  if (name === 'target' && !LINK_TARGETS.has(value)) refuse(`a link target ${shown(value)} is not allowed (only _self and _top)`);
  if (name === 'attributeName' && !ANIMATABLE_ATTRIBUTES.has(value)) refuse(`animating ${shown(value)} is not allowed (only presentation and geometry attributes)`);
  if (element.name === 'style' && name === 'type' && !STYLE_TYPES.has(value.trim().toLowerCase())) refuse(`a style sheet of type ${shown(value)} is not allowed`);
  if (!TEXT_ATTRIBUTES.has(name)) checkStyleValue(value, `${where()}/@${name}`);
}

function checkTextOnly(frame: Frame): string {
  let text = '';
  for (const child of frame.element.children) {
    if (child.type === 'text' || child.type === 'cdata') text += child.value;
    else {
      const what = child.type === 'element' ? `<${child.name}>` : `a ${child.type}`;
      throw new SvgRefusal('unsafe_svg', `<${frame.element.name}> holds text only, not ${what}`, pathOf(frame));
    }
  }
  return text;
}

/** Checks the document's tree; answers every element's signature, in document order. */
export function inspectTree(document: XmlDocument): ElementSignature[] {
  const root = document.root;
  if (root.name !== 'svg') throw new SvgRefusal('invalid_svg', 'the document must be one <svg> element', '/');

  const signatures: ElementSignature[] = [];
  const ids = new Map<string, XmlElement>();
  const stack: Frame[] = [{ element: root, parent: undefined, label: 'svg', depth: 1 }];
  while (stack.length > 0) {
    const frame = stack.pop() as Frame;
    const { element } = frame;
    const where = () => pathOf(frame);
    if (element.name.includes(':')) throw new SvgRefusal('unsafe_svg', `the prefixed element <${element.name}> is not allowed`, where());
    if (!ALLOWED_ELEMENTS.has(element.name)) throw new SvgRefusal('unsafe_svg', `the element <${element.name}> is not allowed`, where());
    if (element.uri !== SVG_NAMESPACE) throw new SvgRefusal('unsafe_svg', `<${element.name}> is not in the SVG namespace (${shown(element.uri)})`, where());
    if (frame.depth > MAX_ELEMENT_DEPTH) throw new SvgRefusal('unsafe_svg', `elements nested deeper than ${MAX_ELEMENT_DEPTH} are not allowed`, where());
    for (const attribute of element.attributes) checkAttribute(element, attribute, where);
    const signature: ElementSignature = { name: element.name, uri: element.uri, attributes: element.attributes, path: where };
    signatures.push(signature);
    const id = idOf(element);
    // A repeated id refers to its first element, as getElementById answers.
    if (id !== undefined && !ids.has(id)) ids.set(id, element);

    if (TEXT_ONLY_ELEMENTS.has(element.name)) {
      const text = checkTextOnly(frame);
      if (element.name === 'style') {
        if (text.length > MAX_STYLESHEET_LENGTH) throw new SvgRefusal('unsafe_svg', `a style sheet longer than ${MAX_STYLESHEET_LENGTH} characters is not allowed`, where());
        checkStylesheet(text, where());
        signature.styleText = text;
      }
      continue;
    }
    const counts = new Map<string, number>();
    const next: Frame[] = [];
    for (const child of element.children) {
      if (child.type !== 'element') continue;
      const count = (counts.get(child.name) ?? 0) + 1;
      counts.set(child.name, count);
      next.push({ element: child, parent: frame, label: `${child.name}[${count}]`, depth: frame.depth + 1 });
    }
    // Last pushed, first taken: push in reverse so elements are visited in document order.
    for (let index = next.length - 1; index >= 0; index--) stack.push(next[index] as Frame);
  }
  checkUseExpansion(root, ids);
  return signatures;
}
