import { isIPv6 } from 'node:net';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { invalidRequest } from '../errors.js';

/**
 * The one trusted origin of a request. Every absolute URL the service builds or compares
 * (discovery `apiBaseUrl`, `verification_uri`, the DPoP `htu` it expects, the approval page's
 * redirect URI and same-origin checks, Cloud sign-in's redirects) comes from `requestOrigin(req)`,
 * or, where no request is at hand, from `serviceOrigin` (the same `PLATFORM_BASE_URL`); tenancy
 * reads the host from the same value, so no request can select one organisation while proving
 * another URL.
 *
 * - `PLATFORM_BASE_URL` set: that origin, whatever the request says (its host also selects the
 *   organisation on a self-hosted deployment that sets it).
 * - Otherwise the request's authority: `Host`, or `X-Forwarded-Host` and `X-Forwarded-Proto`
 *   when `TRUST_PROXY` trusts the peer (Express's own trust function decides).
 *
 * The authority is validated strictly, once, at the edge (`originEdge`): a host name (letters,
 * digits and hyphens in dot-separated labels), a dotted-quad IPv4 address, or an IPv6 address in
 * brackets, then an optional port 1-65535. No user info, path, query, second colon, percent
 * escape, white space, non-ASCII character, empty label, trailing dot or leading-zero port; one
 * `Host` header line (RFC 9112 3.2), one forwarded value (no comma lists). A request failing that
 * is refused with 400 `invalid_request`, before tenancy, authentication or any handler, and the
 * refusal never repeats the value.
 */

export interface ParsedHost {
  /** Lower-case host: a name, a dotted quad, or `[v6]` in canonical form. */
  hostname: string;
  /** The port as sent; undefined when none was. */
  port: number | undefined;
}

export interface RequestOrigin extends ParsedHost {
  scheme: 'http' | 'https';
  /** `scheme://host[:port]`, lower-case, default port dropped: what absolute URLs start with. */
  origin: string;
  /** Where it came from: the configured base URL, or the request (`Host` / forwarded headers). */
  source: 'base-url' | 'request';
}

const MAX_AUTHORITY_LENGTH = 261; // 253 (longest DNS name) + ':' + 5 digits, and room for brackets
const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
const IPV4_OCTET = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;
const PORT = /^[1-9]\d{0,4}$/;

function ipv4(value: string): boolean {
  const octets = value.split('.');
  return octets.length === 4 && octets.every((octet) => IPV4_OCTET.test(octet));
}

/**
 * A `Host`-style authority (`host[:port]`), strictly; undefined when it is anything else. The
 * answer is canonical: lower case, IPv6 compressed (so `[0:0::1]` and `[::1]` are one host).
 */
export function parseHost(value: string): ParsedHost | undefined {
  if (value.length === 0 || value.length > MAX_AUTHORITY_LENGTH) return undefined;
  // Printable ASCII only: no white space, no control or non-ASCII character anywhere.
  if (!/^[\x21-\x7e]+$/.test(value)) return undefined;
  let host: string;
  let portText: string | undefined;
  if (value.startsWith('[')) {
    const close = value.indexOf(']');
    if (close < 0) return undefined;
    const inside = value.slice(1, close);
    const rest = value.slice(close + 1);
    // No zone id (`%25eth0`), nothing but an optional `:port` after the bracket.
    if (!isIPv6(inside) || inside.includes('%')) return undefined;
    if (rest !== '' && !rest.startsWith(':')) return undefined;
    portText = rest === '' ? undefined : rest.slice(1);
    // Canonical form (compressed, lower case), as the WHATWG URL parser writes it.
    host = new URL(`http://[${inside}]/`).hostname;
  } else {
    const parts = value.split(':');
    if (parts.length > 2) return undefined;
    host = (parts[0] ?? '').toLowerCase();
    portText = parts[1];
    if (host.length > 253) return undefined;
    const labels = host.split('.');
    if (!labels.every((label) => LABEL.test(label))) return undefined;
    // A numeric last label makes URL parsers read the whole host as an IPv4 address (`1.2.3`
    // is 1.2.0.3, `0x7f.1` is 127.0.0.1): only a plain dotted quad may look like one.
    const last = labels[labels.length - 1] ?? '';
    if (/^(\d+|0x[0-9a-f]*)$/.test(last) && !ipv4(host)) return undefined;
  }
  let port: number | undefined;
  if (portText !== undefined) {
    if (!PORT.test(portText)) return undefined;
    port = Number(portText);
    if (port > 65535) return undefined;
  }
  return { hostname: host, port };
}

function originOf(scheme: 'http' | 'https', host: ParsedHost): string {
  const defaultPort = scheme === 'https' ? 443 : 80;
  return `${scheme}://${host.hostname}${host.port === undefined || host.port === defaultPort ? '' : `:${host.port}`}`;
}

/** The origin of a configured base URL (`PLATFORM_BASE_URL`, already a bare http(s) origin). */
export function configuredOrigin(baseUrl: string): RequestOrigin {
  const url = new URL(baseUrl);
  const scheme = url.protocol === 'https:' ? 'https' : 'http';
  const host = { hostname: url.hostname, port: url.port === '' ? undefined : Number(url.port) };
  return { scheme, ...host, origin: originOf(scheme, host), source: 'base-url' };
}

/**
 * The service's own origin where no request is at hand: `PLATFORM_BASE_URL`, which Cloud requires
 * (config.ts). Cloud sign-in builds its absolute URLs from it alone: the callback URL registered
 * at each identity provider (checked again when the provider answers), the RFC 9207 `iss` of the
 * redirects back to a client, the sender line of its mails. Undefined without one: a deployment
 * without `PLATFORM_BASE_URL` serves none of that (a self-hosted one names its origin per request,
 * `requestOrigin`). On Cloud it equals every request's `requestOrigin(req).origin`.
 */
export function serviceOrigin(baseUrl: string | undefined): string | undefined {
  return baseUrl === undefined ? undefined : configuredOrigin(baseUrl).origin;
}

/** Why a request's authority was refused; the message never contains the value. */
export class InvalidAuthority extends Error {
  constructor(
    message: string,
    /** The header at fault, as the refusal's `field` names it (`headers.host`). */
    readonly header: string,
  ) {
    super(message);
    this.name = 'InvalidAuthority';
  }
}

/** The request's authority headers, each once; a header sent on several lines is marked `null`. */
interface AuthorityHeaders {
  host: string | null | undefined;
  forwardedHost: string | null | undefined;
  forwardedProto: string | null | undefined;
}

/** One pass over the raw header lines (only names of the right length are lower-cased). */
function authorityHeaders(req: Request): AuthorityHeaders {
  const found: AuthorityHeaders = { host: undefined, forwardedHost: undefined, forwardedProto: undefined };
  const raw = req.rawHeaders;
  for (let index = 0; index < raw.length; index += 2) {
    const name = raw[index] as string;
    let field: keyof AuthorityHeaders;
    if (name.length === 4 && name.toLowerCase() === 'host') field = 'host';
    else if (name.length === 16 && name.toLowerCase() === 'x-forwarded-host') field = 'forwardedHost';
    else if (name.length === 17 && name.toLowerCase() === 'x-forwarded-proto') field = 'forwardedProto';
    else continue;
    found[field] = found[field] === undefined ? (raw[index + 1]) : null;
  }
  return found;
}

/** One header value, or undefined when absent; several lines of it are refused. */
function single(value: string | null | undefined, name: string): string | undefined {
  if (value === null) throw new InvalidAuthority(`the request has more than one ${name} header`, name);
  return value;
}

/**
 * What `parseHost` answered for the authorities seen lately, with the origins built from them: a
 * server is addressed by a handful, so each is parsed and its origin written once. Bounded (an
 * attacker may send any number of distinct valid hosts): emptied when full.
 */
const KNOWN_AUTHORITIES_MAX = 1_000;
interface KnownAuthority {
  parsed: ParsedHost;
  http?: RequestOrigin;
  https?: RequestOrigin;
}
const knownAuthorities = new Map<string, KnownAuthority | null>();

function knownAuthority(value: string): KnownAuthority | undefined {
  // Longer than any authority: refused without a look-up, and never kept (a key is at most
  // MAX_AUTHORITY_LENGTH characters, so the map holds at most about 261 kB of them).
  if (value.length > MAX_AUTHORITY_LENGTH) return undefined;
  let known = knownAuthorities.get(value);
  if (known === undefined) {
    const parsed = parseHost(value);
    known = parsed ? { parsed } : null;
    if (knownAuthorities.size >= KNOWN_AUTHORITIES_MAX) knownAuthorities.clear();
    knownAuthorities.set(value, known);
  }
  return known ?? undefined;
}

/** The (frozen, shared) origin of a known authority under a scheme. */
function requestOriginOf(scheme: 'http' | 'https', known: KnownAuthority): RequestOrigin {
  return (known[scheme] ??= Object.freeze({ scheme, ...known.parsed, origin: originOf(scheme, known.parsed), source: 'request' as const }));
}

/**
 * The origin the request addressed, from its own headers (no base URL involved); throws
 * InvalidAuthority when they do not name one unambiguously. `trusted` is Express's trust
 * function (`app.get('trust proxy fn')`), asked about the peer as Express asks it.
 */
export function originFromRequest(req: Request, trusted: (address: string, hop: number) => boolean): RequestOrigin {
  // RFC 9112 3.2.2: the origin form only; an absolute-form target would name a second authority.
  if (!req.url.startsWith('/')) throw new InvalidAuthority('the request target must be a path', 'host');
  const headers = authorityHeaders(req);
  const hostHeader = single(headers.host, 'host');
  if (hostHeader === undefined) throw new InvalidAuthority('the request has no Host header', 'host');
  const direct = knownAuthority(hostHeader);
  if (!direct) throw new InvalidAuthority('the Host header is not a valid host name and port', 'host');
  let scheme: 'http' | 'https' = (req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http';
  let host = direct;
  // The forwarded headers count (and are checked) only when the peer is a trusted proxy.
  if (trusted(req.socket.remoteAddress ?? '', 0)) {
    const forwardedHost = single(headers.forwardedHost, 'x-forwarded-host');
    if (forwardedHost !== undefined) {
      const parsed = knownAuthority(forwardedHost);
      if (!parsed) throw new InvalidAuthority('the X-Forwarded-Host header is not one valid host name and port', 'x-forwarded-host');
      host = parsed;
    }
    const forwardedProto = single(headers.forwardedProto, 'x-forwarded-proto');
    if (forwardedProto !== undefined) {
      const proto = forwardedProto.toLowerCase();
      if (proto !== 'http' && proto !== 'https') throw new InvalidAuthority('the X-Forwarded-Proto header must be http or https', 'x-forwarded-proto');
      scheme = proto;
    }
  }
  return requestOriginOf(scheme, host);
}

/**
 * The edge step: settles `req.context.origin` once per request (after the request id, before
 * anything that reads a host), or refuses the request with 400 `invalid_request`. The Host
 * header is validated even when a base URL is configured: RFC 9112 3.2 asks a server to refuse
 * a request with a missing, repeated or invalid Host.
 */
export function originEdge(baseUrl: string | undefined): RequestHandler {
  const configured = baseUrl === undefined ? undefined : configuredOrigin(baseUrl);
  return (req: Request, _res: Response, next: NextFunction) => {
    let fromRequest: RequestOrigin;
    try {
      fromRequest = originFromRequest(req, req.app.get('trust proxy fn') as (address: string, hop: number) => boolean);
    } catch (error) {
      if (error instanceof InvalidAuthority) return next(invalidRequest(error.message, { field: `headers.${error.header}` }));
      return next(error);
    }
    req.context.origin = configured ?? fromRequest;
    next();
  };
}

/** The request's trusted origin (set at the edge; every route and page runs after it). */
export function requestOrigin(req: Request): RequestOrigin {
  const origin = req.context?.origin;
  if (!origin) throw new Error('requestOrigin() before the origin edge step ran');
  return origin;
}

/** An absolute URL on this service: the trusted origin and `path` (which starts with `/`). */
export function absoluteUrl(req: Request, path: string): string {
  return `${requestOrigin(req).origin}${path}`;
}
