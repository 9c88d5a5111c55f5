/**
 * What a stored picture's SVG may hold (spec section 8): shapes, text, styles, SMIL animation and
 * `data:` fonts; never script, `foreignObject`, embedded documents, entities, event handlers,
 * `javascript:` URLs, or references to anything except `#id` and `data:`.
 *
 * Every rule the pipeline applies is written here, as data, so a reviewer reads one file. The
 * pipeline (`pipeline.ts`) only enforces them. Everything is an allowlist: an element, attribute,
 * CSS function or at-rule that is not named here is refused, whatever it is.
 *
 * Before the rules, a fixed normalisation (`normalise.ts`) removes what is inert: the standard
 * DOCTYPE, comments, processing instructions, `<metadata>`, and the elements and attributes of the
 * editor and metadata namespaces below (by namespace URI). The rules check what is left.
 *
 * Why some things that look harmless are not allowed:
 * - `metadata` is removed, never checked: it holds arbitrary foreign markup;
 * - `font`/`glyph` (SVG fonts: the HTML parser leaves foreign content at `<font>`),
 *   `foreignObject`, `view`, `cursor`, `tref`, `color-profile`, `iframe`, `handler`, `listener`:
 *   embedded documents, outside references, script, or parser breakouts;
 * - `a` links only within the picture (`#id`), and opens nothing new (`target` `_self`/`_top`);
 * - unknown attributes (`data-*` and `aria-*` are known: they only carry text): frameworks of the
 *   page a picture is inlined into read arbitrary attributes as instructions;
 * - `xml:base`: changes what `#id` resolves against;
 * - `title` and `desc` hold text only: inline in HTML they are HTML integration points, where
 *   the HTML parser reads `<style>` as raw text and can be made to see markup XML does not.
 */

/** What normalisation may remove, as the save answer names it (`normalised`), in this order. */
export const NORMALISED_KINDS = ['doctype', 'comment', 'processing-instruction', 'metadata', 'editor-data', 'namespace-declaration'] as const;
export type NormalisedKind = (typeof NORMALISED_KINDS)[number];

/** The DOCTYPEs normalisation removes: the SVG 1.0 and 1.1 public identifiers, each with its own
 * system identifier. Any other DOCTYPE is refused. */
export const STANDARD_DOCTYPES: ReadonlyMap<string, string> = new Map([
  ['-//W3C//DTD SVG 1.0//EN', 'http://www.w3.org/TR/2001/REC-SVG-20010904/DTD/svg10.dtd'],
  ['-//W3C//DTD SVG 1.1//EN', 'http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd'],
]);

/** Namespaces of drawing programs: their elements and attributes only keep the program's own
 * state (layers, guides, export settings) and are removed. By exact URI. */
export const EDITOR_NAMESPACES: ReadonlySet<string> = new Set([
  // Inkscape and Sodipodi
  'http://www.inkscape.org/namespaces/inkscape',
  'http://sodipodi.sourceforge.net/DTD/sodipodi-0.dtd',
  'http://inkscape.sourceforge.net/DTD/sodipodi-0.dtd',
  // Adobe Illustrator and its SVG export
  'http://ns.adobe.com/AdobeIllustrator/10.0/',
  'http://ns.adobe.com/AdobeSVGViewerExtensions/3.0/',
  'http://ns.adobe.com/Extensibility/1.0/',
  'http://ns.adobe.com/Flows/1.0/',
  'http://ns.adobe.com/Graphs/1.0/',
  'http://ns.adobe.com/ImageReplacement/1.0/',
  'http://ns.adobe.com/SaveForWeb/1.0/',
  'http://ns.adobe.com/Variables/1.0/',
  'http://ns.adobe.com/GenericCustomNamespace/1.0/',
  'http://ns.adobe.com/XPath/1.0/',
  // Sketch, Figma, draw.io, Serif (Affinity), Boxy SVG, Vectornator, Gravit, Visio, CorelDRAW
  'http://www.bohemiancoding.com/sketch/ns',
  'http://www.figma.com/figma/ns',
  'http://www.jgraph.com/',
  'http://www.serif.com/',
  'https://boxy-svg.com',
  'http://vectornator.io',
  'http://www.designer.io/',
  'http://schemas.microsoft.com/visio/2003/SVGExtensions/',
  'http://www.corel.com/coreldraw/odm/2003',
  // LibreOffice (its export, and the slide show data of Impress: presentation, animation, SMIL 2.0)
  'http://xml.openoffice.org/svg/export',
  'http://sun.com/xmlns/staroffice/presentation',
  'urn:oasis:names:tc:opendocument:xmlns:animation:1.0',
  'http://www.w3.org/2001/SMIL20/',
]);

/** Metadata vocabularies (what `<metadata>` holds, and what some programs write outside it). */
export const METADATA_NAMESPACES: ReadonlySet<string> = new Set([
  'http://www.w3.org/1999/02/22-rdf-syntax-ns#',
  'http://purl.org/dc/elements/1.1/',
  'http://purl.org/dc/terms/',
  'http://creativecommons.org/ns#',
  'http://web.resource.org/cc/',
  'http://ns.adobe.com/xap/1.0/',
]);

/** Elements, by their exact (case-sensitive) XML name, without a namespace prefix. */
export const ALLOWED_ELEMENTS: ReadonlySet<string> = new Set([
  // structure
  'svg', 'g', 'defs', 'symbol', 'use', 'title', 'desc', 'switch',
  // links within the picture (see LINK_ATTRIBUTES)
  'a',
  // shapes
  'path', 'rect', 'circle', 'ellipse', 'line', 'polyline', 'polygon',
  // text
  'text', 'tspan', 'textPath',
  // paint servers, clipping, masking, markers
  'linearGradient', 'radialGradient', 'stop', 'pattern', 'clipPath', 'mask', 'marker',
  // styles
  'style',
  // raster images, from `data:` only (see IMAGE_DATA_TYPES)
  'image',
  // filters
  'filter', 'feBlend', 'feColorMatrix', 'feComponentTransfer', 'feFuncR', 'feFuncG', 'feFuncB', 'feFuncA',
  'feComposite', 'feConvolveMatrix', 'feDiffuseLighting', 'feDisplacementMap', 'feDistantLight', 'feDropShadow',
  'feFlood', 'feGaussianBlur', 'feImage', 'feMerge', 'feMergeNode', 'feMorphology', 'feOffset', 'fePointLight',
  'feSpecularLighting', 'feSpotLight', 'feTile', 'feTurbulence',
  // SMIL animation
  'animate', 'animateMotion', 'animateTransform', 'set', 'mpath',
]);

/** Elements whose content is text only (no child elements, no CDATA, no comments). */
export const TEXT_ONLY_ELEMENTS: ReadonlySet<string> = new Set(['title', 'desc', 'style']);

/** SVG presentation attributes (also what SMIL may animate). `cursor` and `color-profile` are
 * left out: both load outside resources. */
export const PRESENTATION_ATTRIBUTES: ReadonlySet<string> = new Set([
  'alignment-baseline', 'baseline-shift', 'clip', 'clip-path', 'clip-rule', 'color', 'color-interpolation',
  'color-interpolation-filters', 'color-rendering', 'direction', 'display', 'dominant-baseline', 'enable-background',
  'fill', 'fill-opacity', 'fill-rule', 'filter', 'flood-color', 'flood-opacity', 'font-family', 'font-size',
  'font-size-adjust', 'font-stretch', 'font-style', 'font-variant', 'font-weight', 'glyph-orientation-horizontal',
  'glyph-orientation-vertical', 'image-rendering', 'isolation', 'kerning', 'letter-spacing', 'lighting-color',
  'marker-end', 'marker-mid', 'marker-start', 'mask', 'mix-blend-mode', 'opacity', 'overflow', 'paint-order',
  'pointer-events', 'shape-rendering', 'stop-color', 'stop-opacity', 'stroke', 'stroke-dasharray',
  'stroke-dashoffset', 'stroke-linecap', 'stroke-linejoin', 'stroke-miterlimit', 'stroke-opacity', 'stroke-width',
  'text-anchor', 'text-decoration', 'text-rendering', 'transform', 'transform-origin', 'unicode-bidi',
  'vector-effect', 'visibility', 'word-spacing', 'writing-mode',
  // SVG 2 and CSS properties browsers read as presentation attributes, none taking a reference
  'mask-type', 'transform-box', 'text-overflow', 'white-space', 'inline-size', 'line-height', 'text-orientation',
  'font-kerning', 'font-variant-caps', 'font-variant-ligatures', 'font-variant-numeric', 'font-variant-east-asian',
  'font-variant-position', 'font-feature-settings', 'font-variation-settings', 'font-optical-sizing',
  'text-decoration-line', 'text-decoration-style', 'text-decoration-color', 'shape-margin', 'shape-padding',
  'solid-color', 'solid-opacity', 'buffered-rendering',
]);

/** Conditional processing (what `<switch>` chooses by). `requiredExtensions` and
 * `requiredFeatures` name features by URI: an identifier compared as text, never loaded. */
export const CONDITIONAL_ATTRIBUTES: ReadonlySet<string> = new Set(['systemLanguage', 'requiredExtensions', 'requiredFeatures']);

/** What `<a>` may carry besides its reference: `target` (see LINK_TARGETS) and its title. */
export const LINK_ATTRIBUTES: ReadonlySet<string> = new Set(['target', 'xlink:title']);

/** A link opens nothing new: the same frame, or the top one. */
export const LINK_TARGETS: ReadonlySet<string> = new Set(['_self', '_top']);

/** `data-*` (lower case, as HTML requires) and `aria-*`: text for scripts and assistive
 * technology of the page, read by nothing in the picture itself. */
export const DATA_ATTRIBUTE = /^data-[a-z0-9_.-]+$/;
export const ARIA_ATTRIBUTE = /^aria-[a-z]+$/;

/** Geometry and the element-specific attributes of the allowed elements: plain values. */
export const GEOMETRY_ATTRIBUTES: ReadonlySet<string> = new Set([
  'x', 'y', 'x1', 'y1', 'x2', 'y2', 'cx', 'cy', 'r', 'rx', 'ry', 'fx', 'fy', 'fr', 'width', 'height', 'd', 'points',
  'pathLength', 'viewBox', 'preserveAspectRatio', 'offset', 'gradientUnits', 'gradientTransform', 'spreadMethod',
  'patternUnits', 'patternContentUnits', 'patternTransform', 'clipPathUnits', 'maskUnits', 'maskContentUnits',
  'markerUnits', 'markerWidth', 'markerHeight', 'refX', 'refY', 'orient', 'dx', 'dy', 'rotate', 'textLength',
  'lengthAdjust', 'startOffset', 'method', 'spacing', 'side', 'filterUnits', 'primitiveUnits', 'in', 'in2', 'result',
  'stdDeviation', 'mode', 'type', 'values', 'tableValues', 'slope', 'intercept', 'amplitude', 'exponent', 'k1', 'k2',
  'k3', 'k4', 'operator', 'radius', 'scale', 'xChannelSelector', 'yChannelSelector', 'baseFrequency', 'numOctaves',
  'seed', 'stitchTiles', 'surfaceScale', 'diffuseConstant', 'specularConstant', 'specularExponent', 'kernelMatrix',
  'kernelUnitLength', 'order', 'divisor', 'bias', 'targetX', 'targetY', 'edgeMode', 'preserveAlpha', 'azimuth',
  'elevation', 'pointsAtX', 'pointsAtY', 'pointsAtZ', 'limitingConeAngle', 'z', 'version', 'media',
]);

/** SMIL timing and value attributes (`values`, `from`, `to`, `by` are checked like styles). */
export const ANIMATION_ATTRIBUTES: ReadonlySet<string> = new Set([
  'attributeName', 'attributeType', 'begin', 'dur', 'end', 'min', 'max', 'restart', 'repeatCount', 'repeatDur',
  'calcMode', 'keyTimes', 'keySplines', 'keyPoints', 'from', 'to', 'by', 'additive', 'accumulate', 'path', 'origin',
]);

/** Identity, styling and accessibility attributes every allowed element may carry. */
export const CORE_ATTRIBUTES: ReadonlySet<string> = new Set([
  'id', 'class', 'style', 'lang', 'xml:lang', 'xml:space', 'tabindex', 'focusable',
  'role', 'aria-label', 'aria-labelledby', 'aria-describedby', 'aria-hidden',
]);

/** Attributes whose value is free text, never read as a style value (`data-*` and `aria-*` too). */
export const TEXT_ATTRIBUTES: ReadonlySet<string> = new Set(['id', 'class', 'lang', 'xml:lang', 'role', 'target', 'xlink:title', 'systemLanguage', 'requiredExtensions', 'requiredFeatures']);

/**
 * Work limits. An attribute value is at most MAX_VALUE_LENGTH characters, except the geometry and
 * animation lists that grow with the drawing (LONG_VALUE_ATTRIBUTES) and `data:` images, which
 * the document's own limit (2 MB) bounds; a `<style>` sheet at most MAX_STYLESHEET_LENGTH. Every
 * check of a value is one linear scan, or css-tree's linear parse of a bounded text.
 */
export const MAX_VALUE_LENGTH = 8 * 1024;
export const MAX_STYLESHEET_LENGTH = 1024 * 1024;
export const LONG_VALUE_ATTRIBUTES: ReadonlySet<string> = new Set(['d', 'points', 'path', 'values', 'keyTimes', 'keySplines', 'keyPoints', 'tableValues', 'kernelMatrix']);

/** Namespace declarations: each name may only bind its one namespace. Any other is refused. */
export const NAMESPACE_DECLARATIONS: ReadonlyMap<string, string> = new Map([
  ['xmlns', 'http://www.w3.org/2000/svg'],
  ['xmlns:xlink', 'http://www.w3.org/1999/xlink'],
]);

/** The reference attributes (`href` and its older `xlink:href`) and where they may point. */
export const REFERENCE_ATTRIBUTES: ReadonlySet<string> = new Set(['href', 'xlink:href']);

/** How an element's `href` may point: `#id` in the same picture, or also a `data:` raster image;
 * a link (`<a>`) only to an element of the picture by its id (no `:`, so never `#javascript:…`). */
export type ReferenceKind = 'fragment' | 'fragment-or-image' | 'link';

export const REFERENCING_ELEMENTS: ReadonlyMap<string, ReferenceKind> = new Map([
  ['a', 'link'],
  ['use', 'fragment'],
  ['textPath', 'fragment'],
  ['mpath', 'fragment'],
  ['linearGradient', 'fragment'],
  ['radialGradient', 'fragment'],
  ['pattern', 'fragment'],
  ['filter', 'fragment'],
  // SMIL: the element the animation targets.
  ['animate', 'fragment'],
  ['animateMotion', 'fragment'],
  ['animateTransform', 'fragment'],
  ['set', 'fragment'],
  ['image', 'fragment-or-image'],
  ['feImage', 'fragment-or-image'],
]);

/** `data:` media types an `image`/`feImage` may embed: raster images only (an SVG in a data
 * URL is a document of its own, which no rule here would have read). */
export const IMAGE_DATA_TYPES: ReadonlySet<string> = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'image/avif']);

/** `data:` media types a CSS `@font-face` `src` may embed. */
export const FONT_DATA_TYPES: ReadonlySet<string> = new Set([
  'font/woff', 'font/woff2', 'font/ttf', 'font/otf', 'font/sfnt', 'font/collection',
  'application/font-woff', 'application/font-woff2', 'application/x-font-woff', 'application/font-sfnt',
  'application/x-font-ttf', 'application/x-font-truetype', 'application/x-font-opentype', 'application/vnd.ms-opentype',
]);

/** What SMIL may animate: presentation and geometry attributes. Never a reference (`href`,
 * `xlink:href`), `style`, `class`, `id`, an event handler, or the animation's own attributes. */
export const ANIMATABLE_ATTRIBUTES: ReadonlySet<string> = new Set(
  [...PRESENTATION_ATTRIBUTES, ...GEOMETRY_ATTRIBUTES].filter((name) => !['type', 'media', 'version', 'in', 'in2', 'result'].includes(name)),
);

/** The values `style`'s `type` and `media` may take on `<style>`: CSS only. */
export const STYLE_TYPES: ReadonlySet<string> = new Set(['text/css']);

/**
 * CSS functions allowed in style sheets, `style` attributes, presentation attributes and SMIL
 * values (by lower-case name; a name written with escapes never matches, so it is refused).
 * `url()` is allowed and checked on its own (REFERENCES below). Left out on purpose:
 * `expression` (old IE script), `image`, `image-set`, `-webkit-image-set`, `cross-fade`,
 * `element`, `src` (all load or show outside things), `attr` (can turn attributes into URLs),
 * `env`, `local` (installed fonts), `paint`.
 */
export const ALLOWED_CSS_FUNCTIONS: ReadonlySet<string> = new Set([
  'url',
  // colours
  'rgb', 'rgba', 'hsl', 'hsla', 'hwb', 'lab', 'lch', 'oklab', 'oklch', 'color', 'color-mix', 'light-dark',
  // maths and variables
  'calc', 'min', 'max', 'clamp', 'var', 'round', 'mod', 'rem', 'abs', 'sign',
  // transforms
  'matrix', 'matrix3d', 'translate', 'translatex', 'translatey', 'translatez', 'translate3d', 'scale', 'scalex',
  'scaley', 'scalez', 'scale3d', 'rotate', 'rotatex', 'rotatey', 'rotatez', 'rotate3d', 'skew', 'skewx', 'skewy',
  'perspective',
  // timing
  'cubic-bezier', 'steps', 'linear',
  // gradients drawn by CSS itself
  'linear-gradient', 'radial-gradient', 'conic-gradient', 'repeating-linear-gradient', 'repeating-radial-gradient',
  'repeating-conic-gradient',
  // filter functions
  'blur', 'brightness', 'contrast', 'drop-shadow', 'grayscale', 'hue-rotate', 'invert', 'opacity', 'saturate', 'sepia',
  // shapes (clip-path, offset-path, d)
  'path', 'circle', 'ellipse', 'inset', 'polygon', 'xywh',
  // @font-face src descriptors, @supports conditions
  'format', 'tech', 'selector', 'font-format', 'font-tech',
  // SMIL begin/end values
  'accesskey', 'wallclock',
]);

/** At-rules allowed in `<style>`. `@import`, `@namespace`, `@property`, `@page` and anything
 * unknown are refused. */
export const ALLOWED_AT_RULES: ReadonlySet<string> = new Set(['font-face', 'keyframes', '-webkit-keyframes', 'media', 'supports', 'layer']);

/** CSS properties refused by name (they ran script or loaded behaviour in some browser). Their
 * values would be refused anyway (they need `url()` or `expression()`); the name makes the
 * message clear. */
export const FORBIDDEN_CSS_PROPERTIES: ReadonlySet<string> = new Set(['behavior', '-ms-behavior', '-moz-binding', 'binding', '-o-link', '-o-link-source']);

/** Structure limits: deeper nesting than browsers' parsers keep as written is refused. */
export const MAX_ELEMENT_DEPTH = 128;
