import type { XastChild, XastElement } from 'svgo';
import { checkDeclarations, checkStyleValue, checkStylesheet } from './css.js';
import { referenceProblem } from './references.js';
import { SvgRefusal, shown } from './refusal.js';
import {
  ALLOWED_ELEMENTS,
  ANIMATABLE_ATTRIBUTES,
  ANIMATION_ATTRIBUTES,
  CORE_ATTRIBUTES,
  GEOMETRY_ATTRIBUTES,
  MAX_ELEMENT_DEPTH,
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
  attributes: Record<string, string>;
  /** Where it is, for a message. */
  path: () => string;
}

interface Frame {
  element: XastElement;
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

function checkUseExpansion(root: XastElement, ids: ReadonlyMap<string, XastElement>): void {
  const drawn = new Map<XastElement, number>();
  const open = new Set<XastElement>();
  const targetOf = (element: XastElement): XastElement | undefined => {
    if (element.name !== 'use') return undefined;
    const href = element.attributes.href ?? element.attributes['xlink:href'];
    return href === undefined ? undefined : ids.get(href.trim().slice(1));
  };
  const stack: { element: XastElement; expanded: boolean }[] = [{ element: root, expanded: false }];
  while (stack.length > 0) {
    const top = stack[stack.length - 1] as { element: XastElement; expanded: boolean };
    const { element } = top;
    const next = [...element.children.filter((child): child is XastElement => child.type === 'element')];
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
        if (open.has(child)) throw new SvgRefusal('unsafe_svg', `<use> references form a loop (through #${target?.attributes.id ?? child.attributes.id ?? '?'})`, '/svg');
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

function pathOf(frame: Frame): string {
  const labels: string[] = [];
  for (let at: Frame | undefined = frame; at; at = at.parent) labels.push(at.label);
  labels.reverse();
  // A deep path keeps its ends: where it starts and the last few steps.
  if (labels.length > 12) labels.splice(3, labels.length - 9, '…');
  return `/${labels.join('/')}`;
}

function checkAttribute(element: XastElement, name: string, value: string, where: () => string): void {
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
    const problem = referenceProblem(value, kind as 'fragment' | 'fragment-or-image');
    if (problem) refuse(`${shown(value)}: ${problem}`);
    return;
  }
  const isAnimation = ANIMATION_ELEMENTS.has(element.name);
  const allowed =
    CORE_ATTRIBUTES.has(name) || PRESENTATION_ATTRIBUTES.has(name) || GEOMETRY_ATTRIBUTES.has(name) || (isAnimation && ANIMATION_ATTRIBUTES.has(name));
  if (!allowed) refuse(`the attribute ${name} is not allowed on <${element.name}>`);
  if (name === 'style') {
    checkDeclarations(value, `${where()}/@style`);
    return;
  }
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

/** Checks the tree; answers every element's signature, in document order. */
export function inspectTree(children: readonly XastChild[]): ElementSignature[] {
  const roots = children.filter((child) => child.type === 'element');
  const stray = children.find((child) => child.type !== 'element' && child.type !== 'comment' && !(child.type === 'instruction' && child.name === 'xml'));
  if (stray) throw new SvgRefusal('invalid_svg', `a ${stray.type} outside the <svg> element is not allowed`, '/');
  const root = roots[0];
  if (roots.length !== 1 || !root || root.name !== 'svg') throw new SvgRefusal('invalid_svg', 'the document must be one <svg> element', '/');

  const signatures: ElementSignature[] = [];
  const ids = new Map<string, XastElement>();
  const stack: Frame[] = [{ element: root, parent: undefined, label: 'svg', depth: 1 }];
  while (stack.length > 0) {
    const frame = stack.pop() as Frame;
    const { element } = frame;
    const where = () => pathOf(frame);
    if (element.name.includes(':')) throw new SvgRefusal('unsafe_svg', `the prefixed element <${element.name}> is not allowed`, where());
    if (!ALLOWED_ELEMENTS.has(element.name)) throw new SvgRefusal('unsafe_svg', `the element <${element.name}> is not allowed`, where());
    if (frame.depth > MAX_ELEMENT_DEPTH) throw new SvgRefusal('unsafe_svg', `elements nested deeper than ${MAX_ELEMENT_DEPTH} are not allowed`, where());
    for (const [name, value] of Object.entries(element.attributes)) checkAttribute(element, name, value, where);
    signatures.push({ name: element.name, attributes: element.attributes, path: where });
    const id = element.attributes.id;
    // A repeated id refers to its first element, as getElementById answers.
    if (id !== undefined && !ids.has(id)) ids.set(id, element);

    if (TEXT_ONLY_ELEMENTS.has(element.name)) {
      const text = checkTextOnly(frame);
      if (element.name === 'style') checkStylesheet(text, where());
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
