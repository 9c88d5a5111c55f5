import { checkDeclarations, checkStyleValue, checkStylesheet, mayHoldFunction } from './css.js';
import { SVG_NAMESPACE, type XmlAttribute, type XmlDocument, type XmlElement, type XmlNode } from './parse.js';
import { dataMediaType, referenceProblem } from './references.js';
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
  readonly name: string;
  readonly uri: string;
  readonly attributes: readonly XmlAttribute[];
  /** The text of a `<style>` (the CSS that was checked). */
  readonly styleText?: string | undefined;
  /** Where it is, for a message. */
  path(): string;
}

/**
 * One visited element: its signature, and where it is (its parent, its depth, its place in
 * document order and how many elements its subtree holds); the path is written out only for a
 * message.
 */
class Frame implements ElementSignature {
  readonly name: string;
  readonly uri: string;
  readonly attributes: readonly XmlAttribute[];
  styleText: string | undefined = undefined;
  /** Its place among all elements, in document order (set when visited). */
  index = -1;
  /** The elements of its subtree, itself included (counted after the walk). */
  size = 1;

  constructor(
    readonly element: XmlElement,
    readonly parent: Frame | undefined,
    readonly depth: number,
  ) {
    this.name = element.name;
    this.uri = element.uri;
    this.attributes = element.attributes;
  }

  /** Its one-based number among its parent's children of the same name. */
  private number(): number {
    let count = 0;
    for (const sibling of this.parent?.element.children ?? []) {
      if (sibling.type === 'element' && sibling.name === this.name) count += 1;
      if (sibling === this.element) break;
    }
    return count;
  }

  path(): string {
    const labels: string[] = [];
    labels.push(this.parent ? `${this.name}[${this.number()}]` : 'svg');
    for (let at = this.parent; at; at = at.parent) labels.push(at.parent ? `${at.name}[${at.number()}]` : 'svg');
    labels.reverse();
    // A deep path keeps its ends: where it starts and the last few steps.
    if (labels.length > 12) labels.splice(3, labels.length - 9, '…');
    return `/${labels.join('/')}`;
  }
}

/** The attributes every allowed element may carry (one look-up for the four lists of rules.ts). */
const ATTRIBUTES_OF_EVERY_ELEMENT: ReadonlySet<string> = new Set([...CORE_ATTRIBUTES, ...CONDITIONAL_ATTRIBUTES, ...PRESENTATION_ATTRIBUTES, ...GEOMETRY_ATTRIBUTES]);

const ANIMATION_ELEMENTS = new Set(['animate', 'animateMotion', 'animateTransform', 'set']);

/**
 * `<use>` draws a copy of what it points at, copies can hold further `<use>`s, and so a small
 * picture can ask a browser to draw billions of elements ("xlink laughs"), or loop. The elements
 * a picture would draw, copies included, are counted (each element once, with memory: an explicit
 * stack, no recursion); a loop or more than this many is refused.
 */
const MAX_DRAWN_ELEMENTS = 100_000;

const tooManyDrawn = (): SvgRefusal => new SvgRefusal('unsafe_svg', `<use> references would draw more than ${MAX_DRAWN_ELEMENTS} elements`, '/svg');

interface Expansion {
  element: XmlElement;
  /** What it draws: its child elements, and for a `<use>` its target (set when first visited). */
  next: XmlElement[] | undefined;
}

function checkUseExpansion(root: XmlElement, ids: ReadonlyMap<string, XmlElement>): void {
  const drawn = new Map<XmlElement, number>();
  const open = new Set<XmlElement>();
  const targetOf = (element: XmlElement): XmlElement | undefined => (element.name === 'use' ? targetOfUse(element, ids) : undefined);
  const stack: Expansion[] = [{ element: root, next: undefined }];
  while (stack.length > 0) {
    const top = stack[stack.length - 1] as Expansion;
    const { element } = top;
    if (top.next === undefined) {
      if (drawn.has(element)) {
        stack.pop();
        continue;
      }
      const next: XmlElement[] = [];
      for (const child of element.children) if (child.type === 'element') next.push(child);
      const target = targetOf(element);
      if (target) next.push(target);
      top.next = next;
      open.add(element);
      for (const child of next) {
        if (open.has(child)) throw new SvgRefusal('unsafe_svg', `<use> references form a loop (through #${idOf(target ?? child) ?? '?'})`, '/svg');
        if (!drawn.has(child)) stack.push({ element: child, next: undefined });
      }
      continue;
    }
    stack.pop();
    open.delete(element);
    let total = 1;
    for (const child of top.next) total += drawn.get(child) ?? 0;
    if (total > MAX_DRAWN_ELEMENTS) throw tooManyDrawn();
    drawn.set(element, total);
  }
}

/** The element a `<use>` draws, by its id. */
function targetOfUse<T>(element: XmlElement, ids: ReadonlyMap<string, T>): T | undefined {
  const href = element.attributes.find((attribute) => attribute.name === 'href' || attribute.name === 'xlink:href')?.value;
  return href === undefined ? undefined : ids.get(href.trim().slice(1));
}

/**
 * The same count as `checkUseExpansion`, without walking the tree again: what an element draws is
 * its subtree's elements plus, for each `<use>` in that subtree, what the `<use>`'s target draws;
 * a subtree is a run of `signatures` (document order), so its `<use>`s are a run of `uses`. Only
 * targets are visited (depth first, each once, with memory). True when the picture draws at most
 * MAX_DRAWN_ELEMENTS elements without a loop; false on a loop, on too many, and when the quick
 * count would take more steps than a few per `<use>` (nested targets), for `checkUseExpansion` to
 * decide: the answer is never true where that one refuses.
 */
function drawnFits(signatures: readonly Frame[], uses: readonly Frame[], ids: ReadonlyMap<string, Frame>): boolean {
  for (let index = signatures.length - 1; index > 0; index--) {
    const frame = signatures[index] as Frame;
    (frame.parent as Frame).size += frame.size;
  }
  const drawn = new Map<Frame, number>();
  const open = new Set<Frame>();
  /** The first `<use>` at or after a place in document order (`uses` is in document order). */
  const firstUseFrom = (place: number): number => {
    let low = 0;
    let high = uses.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if ((uses[middle] as Frame).index < place) low = middle + 1;
      else high = middle;
    }
    return low;
  };
  interface Step {
    frame: Frame;
    /** The next `<use>` of its subtree to add. */
    use: number;
    total: number;
  }
  let budget = 4 * uses.length + 16;
  const root = signatures[0] as Frame;
  const stack: Step[] = [{ frame: root, use: 0, total: root.size }];
  open.add(root);
  while (stack.length > 0) {
    const step = stack[stack.length - 1] as Step;
    const end = step.frame.index + step.frame.size;
    let descended = false;
    while (step.use < uses.length && (uses[step.use] as Frame).index < end) {
      if (--budget < 0) return false;
      const target = targetOfUse((uses[step.use] as Frame).element, ids);
      if (target !== undefined) {
        if (open.has(target)) return false;
        const known = drawn.get(target);
        if (known === undefined) {
          open.add(target);
          stack.push({ frame: target, use: firstUseFrom(target.index), total: target.size });
          descended = true;
          break;
        }
        step.total += known;
        if (step.total > MAX_DRAWN_ELEMENTS) return false;
      }
      step.use += 1;
    }
    if (descended) continue;
    if (step.total > MAX_DRAWN_ELEMENTS) return false;
    stack.pop();
    open.delete(step.frame);
    drawn.set(step.frame, step.total);
  }
  return true;
}

function idOf(element: XmlElement): string | undefined {
  for (const attribute of element.attributes) if (attribute.name === 'id') return attribute.value;
  return undefined;
}

/** `on…` in any case: what `/^on/i` matches (ASCII letters only), without a regular expression. */
function isHandlerName(name: string): boolean {
  return (name.charCodeAt(0) | 0x20) === 0x6f && (name.charCodeAt(1) | 0x20) === 0x6e;
}

function refuseAttribute(frame: Frame, name: string, reason: string): never {
  throw new SvgRefusal('unsafe_svg', reason, `${frame.path()}/@${name}`);
}

/** An element's place, written out only for a message. (Made here, not in the walk: a closure
 * there would cost every element its captured variables.) */
function elementPlace(frame: Frame): () => string {
  return () => frame.path();
}

/** An attribute's place, written out only for a message. (Made here, not in checkAttribute: a
 * closure there would cost every attribute its captured variables, checked or not.) */
function attributePlace(frame: Frame, name: string): () => string {
  return () => `${frame.path()}/@${name}`;
}

function checkAttribute(frame: Frame, attribute: XmlAttribute): void {
  const { element } = frame;
  const { name, value } = attribute;
  if (name === 'xmlns' || name.startsWith('xmlns:')) {
    const expected = NAMESPACE_DECLARATIONS.get(name);
    if (expected === undefined) refuseAttribute(frame, name, `the namespace declaration ${name} is not allowed (only the SVG and XLink namespaces)`);
    if (value !== expected) refuseAttribute(frame, name, `${name} must be ${shown(expected)}, not ${shown(value)}`);
    return;
  }
  if (isHandlerName(name)) refuseAttribute(frame, name, `the event handler attribute ${name} is not allowed`);
  if (REFERENCE_ATTRIBUTES.has(name)) {
    const kind = REFERENCING_ELEMENTS.get(element.name);
    if (!kind) refuseAttribute(frame, name, `<${element.name}> may not carry ${name}`);
    // A data: image may be as long as the picture; anything else is a short reference.
    if (value.length > MAX_VALUE_LENGTH && dataMediaType(value.trimStart()) === undefined) refuseAttribute(frame, name, `the value of ${name} is longer than ${MAX_VALUE_LENGTH} characters (the limit of an attribute value)`);
    const problem = referenceProblem(value, kind);
    if (problem) refuseAttribute(frame, name, `${shown(value)}: ${problem}`);
    return;
  }
  if (value.length > MAX_VALUE_LENGTH && !LONG_VALUE_ATTRIBUTES.has(name)) refuseAttribute(frame, name, `the value of ${name} is longer than ${MAX_VALUE_LENGTH} characters (the limit of an attribute value)`);
  const isFree = (name.startsWith('data-') && DATA_ATTRIBUTE.test(name)) || (name.startsWith('aria-') && ARIA_ATTRIBUTE.test(name));
  const allowed =
    isFree ||
    ATTRIBUTES_OF_EVERY_ELEMENT.has(name) ||
    (ANIMATION_ELEMENTS.has(element.name) && ANIMATION_ATTRIBUTES.has(name)) ||
    (element.name === 'a' && LINK_ATTRIBUTES.has(name));
  if (!allowed) refuseAttribute(frame, name, `the attribute ${name} is not allowed on <${element.name}>`);
  if (isFree) return;
  if (name === 'style') {
    checkDeclarations(value, attributePlace(frame, name));
    return;
  }
  if (name === 'target' && !LINK_TARGETS.has(value)) refuseAttribute(frame, name, `a link target ${shown(value)} is not allowed (only _self and _top)`);
  if (name === 'attributeName' && !ANIMATABLE_ATTRIBUTES.has(value)) refuseAttribute(frame, name, `animating ${shown(value)} is not allowed (only presentation and geometry attributes)`);
  if (element.name === 'style' && name === 'type' && !STYLE_TYPES.has(value.trim().toLowerCase())) refuseAttribute(frame, name, `a style sheet of type ${shown(value)} is not allowed`);
  // (A value without a function or an escape passes checkStyleValue at once: no place is made for it.)
  if (!TEXT_ATTRIBUTES.has(name) && mayHoldFunction(value)) checkStyleValue(value, attributePlace(frame, name));
}

function checkTextOnly(frame: Frame): string {
  let text = '';
  for (const child of frame.element.children) {
    if (child.type === 'text' || child.type === 'cdata') text += child.value;
    else {
      const what = child.type === 'element' ? `<${child.name}>` : `a ${child.type}`;
      throw new SvgRefusal('unsafe_svg', `<${frame.element.name}> holds text only, not ${what}`, frame.path());
    }
  }
  return text;
}

/** Checks the document's tree; answers every element's signature, in document order. */
export function inspectTree(document: XmlDocument): ElementSignature[] {
  const root = document.root;
  if (root.name !== 'svg') throw new SvgRefusal('invalid_svg', 'the document must be one <svg> element', '/');

  const signatures: Frame[] = [];
  const ids = new Map<string, Frame>();
  const uses: Frame[] = [];
  const stack: Frame[] = [new Frame(root, undefined, 1)];
  while (stack.length > 0) {
    const frame = stack.pop() as Frame;
    const { element } = frame;
    if (element.name.includes(':')) throw new SvgRefusal('unsafe_svg', `the prefixed element <${element.name}> is not allowed`, frame.path());
    if (!ALLOWED_ELEMENTS.has(element.name)) throw new SvgRefusal('unsafe_svg', `the element <${element.name}> is not allowed`, frame.path());
    if (element.uri !== SVG_NAMESPACE) throw new SvgRefusal('unsafe_svg', `<${element.name}> is not in the SVG namespace (${shown(element.uri)})`, frame.path());
    if (frame.depth > MAX_ELEMENT_DEPTH) throw new SvgRefusal('unsafe_svg', `elements nested deeper than ${MAX_ELEMENT_DEPTH} are not allowed`, frame.path());
    for (const attribute of element.attributes) checkAttribute(frame, attribute);
    frame.index = signatures.length;
    signatures.push(frame);
    if (element.name === 'use') uses.push(frame);
    const id = idOf(element);
    // A repeated id refers to its first element, as getElementById answers.
    if (id !== undefined && !ids.has(id)) ids.set(id, frame);

    if (TEXT_ONLY_ELEMENTS.has(element.name)) {
      const text = checkTextOnly(frame);
      if (element.name === 'style') {
        if (text.length > MAX_STYLESHEET_LENGTH) throw new SvgRefusal('unsafe_svg', `a style sheet longer than ${MAX_STYLESHEET_LENGTH} characters is not allowed`, frame.path());
        checkStylesheet(text, elementPlace(frame));
        frame.styleText = text;
      }
      continue;
    }
    // Last pushed, first taken: push in reverse so elements are visited in document order.
    const children = element.children;
    for (let index = children.length - 1; index >= 0; index--) {
      const child = children[index] as XmlNode;
      if (child.type === 'element') stack.push(new Frame(child, frame, frame.depth + 1));
    }
  }
  // Without a <use>, each element is drawn once: the count is the number of elements.
  if (uses.length === 0) {
    if (signatures.length > MAX_DRAWN_ELEMENTS) throw tooManyDrawn();
  } else if (!drawnFits(signatures, uses, ids)) {
    // A loop, too many, or a shape the quick count does not take on: the full count refuses it
    // with its own reason, or passes it.
    checkUseExpansion(root, new Map([...ids].map(([id, frame]) => [id, frame.element])));
  }
  return signatures;
}
