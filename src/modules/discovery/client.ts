import { promises as dnsPromises, NODATA, NOTFOUND } from 'node:dns';
import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';
import type { FromSchema } from 'json-schema-to-ts';
import { compile, describeError } from '../../http/schema.js';

/**
 * The client side of discovery (spec 4.1): from a work email to the organisation's platform.
 *
 * The DNS name `platform-discover.<domain>` points at the platform in one of two ways:
 *
 * - a CNAME to the platform's host name: the base address is `https://<target>`;
 * - a TXT record `v=platform1; url=https://<host>`: the base address is that origin.
 *
 * When both answer, the TXT record wins. It is the explicit statement (scheme, host and port
 * written out), whereas a CNAME only says "this name is an alias of that one", and the alias may
 * well lead to a load balancer or CDN name that is not the address to talk to. Both can answer
 * in practice even though a CNAME may not share its name with other data (RFC 2181 10.1): a TXT
 * query follows the alias, so a `v=platform1` record at the CNAME's target is answered for the
 * discovery name too. A broken TXT record of ours is refused rather than passed over for the
 * CNAME: discovery decides where a person's sign-in goes, so an ambiguous publication stops it.
 *
 * The document is then fetched from `<base>/.well-known/platform.json`: https only, bounded in
 * time and size, redirects followed only within the same origin (another origin would be a
 * different platform than the one the domain's owner published).
 */

export type DiscoveryErrorCode =
  | 'invalid_email'
  | 'no_record'
  | 'malformed_record'
  | 'conflicting_records'
  /** The DNS could not answer (server failure, timeout, refused): not the same as "no record". */
  | 'lookup_failed'
  | 'fetch_failed'
  | 'invalid_document';

export class DiscoveryError extends Error {
  constructor(
    readonly code: DiscoveryErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'DiscoveryError';
  }
}

/**
 * What a client needs from the document, and no more: fields the spec does not show may appear
 * (and do: `apiBaseUrl`, `organisation`), so unknown fields are kept, not refused.
 */
const discoveredDocumentSchema = {
  type: 'object',
  required: ['edition', 'dpopSigningAlgs'],
  properties: {
    edition: { type: 'string', minLength: 1 },
    apiBaseUrl: { type: 'string', format: 'uri' },
    organisation: {
      type: 'object',
      required: ['id', 'name'],
      properties: { id: { type: 'string' }, name: { type: 'string' } },
    },
    auth: {
      type: 'object',
      properties: {
        issuer: { type: 'string', format: 'uri' },
        clientId: { type: 'string', minLength: 1 },
        apiScope: { type: 'string', minLength: 1 },
      },
    },
    dpopSigningAlgs: { type: 'array', items: { type: 'string' } },
  },
} as const;

export type DiscoveredDocument = FromSchema<typeof discoveredDocumentSchema>;

export interface Discovery {
  /** The platform's origin, e.g. `https://platform.example.com` (no trailing slash). */
  baseUrl: string;
  source: 'cname' | 'txt';
  document: DiscoveredDocument;
}

export interface DiscoverOptions {
  /** DNS servers to ask instead of the system's, as `node:dns` `setServers` takes them (`'127.0.0.1:5353'`). */
  dnsServers?: readonly string[];
  /** Milliseconds per DNS try (two tries per server). */
  dnsTimeoutMs?: number;
  fetch?: typeof globalThis.fetch;
  /** Milliseconds for the whole document fetch, redirects and body included. */
  fetchTimeoutMs?: number;
  maxDocumentBytes?: number;
  /**
   * Tests and local development only: accept `http:` for loopback hosts (`localhost`,
   * `127.0.0.1`, `[::1]`), in TXT records and for a CNAME target. Named and scoped like the
   * server's `OIDC_ALLOW_HTTP_LOOPBACK`.
   */
  allowHttpLoopback?: boolean;
  /**
   * The port a CNAME target is reached on. A CNAME cannot carry one and the spec's base address
   * is `https://<host>`, so only test rigs (a platform on an ephemeral loopback port) set it.
   */
  cnamePort?: number;
}

export const DISCOVERY_LABEL = 'platform-discover';
export const DOCUMENT_PATH = '/.well-known/platform.json';
const DEFAULTS = { dnsTimeoutMs: 2_500, fetchTimeoutMs: 10_000, maxDocumentBytes: 64 * 1024 };
const MAX_REDIRECTS = 3;
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);
const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

export async function discover(email: string, options: DiscoverOptions = {}): Promise<Discovery> {
  const domain = domainOfEmail(email);
  const name = `${DISCOVERY_LABEL}.${domain}`;
  const base = await lookUp(name, options);
  const document = await fetchDocument(base.baseUrl, options);
  return { ...base, document };
}

// The email --------------------------------------------------------------------------------

/** The ASCII (A-label) form of the email's domain: the form DNS is asked in. */
export function domainOfEmail(email: string): string {
  const text = typeof email === 'string' ? email.trim() : '';
  const at = text.indexOf('@');
  const invalid = (why: string) => new DiscoveryError('invalid_email', `${JSON.stringify(text)} is not a work email address: ${why}`);
  if (at < 0 || at !== text.lastIndexOf('@')) throw invalid('it needs exactly one @');
  const local = text.slice(0, at);
  const written = text.slice(at + 1);
  // eslint-disable-next-line no-control-regex
  if (local === '' || local.length > 64 || /[\s\x00-\x1f\x7f]/u.test(local)) throw invalid('the part before @ is not a mailbox name');
  // domainToASCII maps an internationalised name to its A-labels (and lower-cases); '' means invalid.
  const domain = /[\s[\]]/u.test(written) ? '' : domainToASCII(written);
  const valid = domain.includes('.') && isHostName(domain) && `${DISCOVERY_LABEL}.${domain}`.length <= 253;
  if (!valid) throw invalid(`${JSON.stringify(written)} is not a domain name`);
  return domain;
}

// DNS ----------------------------------------------------------------------------------------

interface Pointer {
  baseUrl: string;
  source: 'cname' | 'txt';
}

type TxtVerdict = { kind: 'ours'; origin: string } | { kind: 'malformed'; why: string } | { kind: 'other' };

async function lookUp(name: string, options: DiscoverOptions): Promise<Pointer> {
  const resolver = new dnsPromises.Resolver({ timeout: options.dnsTimeoutMs ?? DEFAULTS.dnsTimeoutMs, tries: 2 });
  if (options.dnsServers) resolver.setServers([...options.dnsServers]);
  // Both are asked at once. A failed TXT lookup is not read as "no TXT record": TXT wins over
  // CNAME, so falling back to the CNAME could go somewhere the domain's owner did not intend.
  const [cnames, txts] = await Promise.all([
    answerOrNothing(resolver.resolveCname(name), name, 'CNAME'),
    answerOrNothing(resolver.resolveTxt(name), name, 'TXT'),
  ]);

  const verdicts = txts.map((chunks) => {
    // RFC 7208 3.3: a record longer than 255 octets arrives as several strings, read as one.
    const text = chunks.join('');
    return { text, verdict: readTxtRecord(text, options) };
  });
  const malformed = verdicts.find((entry) => entry.verdict.kind === 'malformed');
  if (malformed) {
    const why = (malformed.verdict as { why: string }).why;
    throw new DiscoveryError('malformed_record', `the TXT record ${quote(malformed.text)} at ${name} is not of the form "v=platform1; url=https://<host>": ${why}`);
  }
  const origins = new Set(verdicts.flatMap((entry) => (entry.verdict.kind === 'ours' ? [entry.verdict.origin] : [])));
  if (origins.size > 1) {
    throw new DiscoveryError('conflicting_records', `${name} has TXT records naming different platforms: ${[...origins].join(', ')}`);
  }
  const [txtOrigin] = origins;
  if (txtOrigin) return { baseUrl: txtOrigin, source: 'txt' };

  const targets = new Set(cnames.map((target) => target.toLowerCase().replace(/\.$/, '')));
  if (targets.size > 1) {
    throw new DiscoveryError('conflicting_records', `${name} has several CNAME records: ${[...targets].join(', ')}`);
  }
  const [target] = targets;
  if (target !== undefined) return { baseUrl: originOfCnameTarget(name, target, options), source: 'cname' };

  const ignored = verdicts.length;
  throw new DiscoveryError(
    'no_record',
    `${name} has neither a CNAME nor a "v=platform1" TXT record` +
      (ignored > 0 ? ` (${ignored} TXT record${ignored === 1 ? '' : 's'} of another kind ignored)` : ''),
  );
}

/** "The name does not exist" and "it has no records of this type" are answers; anything else is a failure to get one. */
async function answerOrNothing<T>(query: Promise<T[]>, name: string, type: string): Promise<T[]> {
  try {
    return await query;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === NOTFOUND || code === NODATA) return [];
    throw new DiscoveryError('lookup_failed', `the ${type} lookup of ${name} failed (${typeof code === 'string' ? code : 'unknown error'})`, { cause: error });
  }
}

function readTxtRecord(text: string, options: Pick<DiscoverOptions, 'allowHttpLoopback'> = {}): TxtVerdict {
  const trimmed = text.trim();
  // Records of other versions and of other purposes share the name; only ours are read. The
  // tag is recognised whatever its case so a mis-cased record of ours is reported, not ignored.
  if (!/^v=platform1(?=$|[\s;])/iu.test(trimmed)) return { kind: 'other' };
  const match = /^v=platform1[ \t]*;[ \t]*url=([^\s;]+)$/u.exec(trimmed);
  if (!match) return { kind: 'malformed', why: 'expected exactly the two fields "v=platform1" and "url=…", separated by ";"' };
  const written = match[1]!;
  let url: URL;
  try {
    url = new URL(written);
  } catch {
    return { kind: 'malformed', why: 'the url is not a URL' };
  }
  // The URL parser lets through host names no DNS name can have (`a;b`, `*.example`).
  if (!isHostName(url.hostname) && isIP(url.hostname) !== 4 && !url.hostname.startsWith('[')) {
    return { kind: 'malformed', why: 'the url does not name a host' };
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && options.allowHttpLoopback && LOOPBACK_HOSTS.has(url.hostname))) {
    return { kind: 'malformed', why: 'the url must use https' };
  }
  // `new URL` forgives an empty query or fragment (`https://h?`), so look at what was written too.
  if (url.username !== '' || url.password !== '' || written.includes('@')) return { kind: 'malformed', why: 'the url must not carry credentials' };
  if (url.pathname !== '/' || url.search !== '' || url.hash !== '' || /[?#]/u.test(written)) {
    return { kind: 'malformed', why: 'the url must be a bare origin, without path, query or fragment' };
  }
  return { kind: 'ours', origin: url.origin };
}

function originOfCnameTarget(name: string, target: string, options: DiscoverOptions): string {
  if (!isHostName(target)) {
    throw new DiscoveryError('malformed_record', `the CNAME of ${name} points at ${quote(target)}, which is not a host name`);
  }
  const scheme = options.allowHttpLoopback && LOOPBACK_HOSTS.has(target) ? 'http' : 'https';
  return new URL(`${scheme}://${target}${options.cnamePort === undefined ? '' : `:${options.cnamePort}`}`).origin;
}

/** Letters, digits and hyphens in labels (RFC 1123 2.1), and not an IPv4 address in disguise. */
function isHostName(host: string): boolean {
  const labels = host.split('.');
  return host.length <= 253 && labels.every((label) => LABEL.test(label)) && !/^\d+$/u.test(labels[labels.length - 1]!);
}

function quote(text: string): string {
  return JSON.stringify(text.length > 200 ? `${text.slice(0, 200)}…` : text);
}

// The document ---------------------------------------------------------------------------------

async function fetchDocument(baseUrl: string, options: DiscoverOptions): Promise<DiscoveredDocument> {
  const fetchImpl = options.fetch ?? globalThis.fetch;
  const timeoutMs = options.fetchTimeoutMs ?? DEFAULTS.fetchTimeoutMs;
  const maxBytes = options.maxDocumentBytes ?? DEFAULTS.maxDocumentBytes;
  const signal = AbortSignal.timeout(timeoutMs);
  const origin = new URL(baseUrl).origin;
  let url = new URL(DOCUMENT_PATH, baseUrl);

  const failed = (message: string, cause?: unknown) => new DiscoveryError('fetch_failed', message, { cause });
  try {
    for (let redirects = 0; ; redirects += 1) {
      const response = await fetchImpl(url, { redirect: 'manual', signal, headers: { Accept: 'application/json' } });
      if (response.status >= 300 && response.status < 400) {
        await response.body?.cancel();
        const location = response.headers.get('location');
        const next = location === null ? null : URL.canParse(location, url.href) ? new URL(location, url) : null;
        if (next === null) throw failed(`${url.href} answered ${response.status} without a usable Location`);
        if (next.origin !== origin) throw failed(`${url.href} redirects to another origin (${next.origin}); discovery stays on ${origin}`);
        if (redirects >= MAX_REDIRECTS) throw failed(`${origin} redirected more than ${MAX_REDIRECTS} times`);
        url = next;
        continue;
      }
      if (response.status !== 200) {
        const code = await errorCodeOf(response, maxBytes);
        throw failed(`${url.href} answered ${response.status}${code ? ` (${code})` : ''}`);
      }
      const mediaType = (response.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
      if (mediaType !== 'application/json') {
        await response.body?.cancel();
        throw new DiscoveryError('invalid_document', `${url.href} answered ${mediaType ? `"${mediaType}"` : 'no media type'}, not application/json`);
      }
      return parseDocument(await readBounded(response, maxBytes, url.href), url);
    }
  } catch (error) {
    if (error instanceof DiscoveryError) throw error;
    if (signal.aborted) throw failed(`${url.href} did not answer within ${timeoutMs} ms`, error);
    const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause;
    const detail = typeof cause?.code === 'string' ? cause.code : typeof cause?.message === 'string' ? cause.message : String(error);
    throw failed(`could not fetch ${url.href}: ${detail}`, error);
  }
}

/** Reads the body, refusing it as soon as it passes the cap: the size is the server's to lie about. */
async function readBounded(response: Response, maxBytes: number, where: string): Promise<string> {
  const tooLarge = () => new DiscoveryError('invalid_document', `${where} answered more than ${maxBytes} bytes`);
  const declared = Number(response.headers.get('content-length') ?? '0');
  if (declared > maxBytes) {
    await response.body?.cancel();
    throw tooLarge();
  }
  if (!response.body) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel();
      throw tooLarge();
    }
    chunks.push(value);
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(chunks));
  } catch {
    throw new DiscoveryError('invalid_document', `${where} answered text that is not UTF-8`);
  }
}

/** The spec's error code of a refusal (`unknown_tenant` says the platform does not serve this host), when there is one. */
async function errorCodeOf(response: Response, maxBytes: number): Promise<string | undefined> {
  try {
    const body = JSON.parse(await readBounded(response, maxBytes, 'the refusal')) as { error?: unknown };
    return typeof body.error === 'string' && /^[a-z_]{1,64}$/u.test(body.error) ? body.error : undefined;
  } catch {
    return undefined;
  }
}

const validateDocument = compile(discoveredDocumentSchema, 'body');

function parseDocument(text: string, url: URL): DiscoveredDocument {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new DiscoveryError('invalid_document', `${url.href} answered something that is not JSON`);
  }
  if (!validateDocument(parsed)) {
    throw new DiscoveryError('invalid_document', `${url.href} is not a discovery document: ${describeError('document', validateDocument.errors?.[0]).message}`);
  }
  return parsed as DiscoveredDocument;
}
