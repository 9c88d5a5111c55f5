import cors from 'cors';
import type { NextFunction, Request, RequestHandler, Response } from 'express';

/**
 * CORS for browser consoles on other origins (CORS_ALLOWED_ORIGINS), off by default: without the
 * setting no answer carries a CORS header and a preflight (`OPTIONS`) is 405 like any method a path
 * does not serve. With it, a request from a listed origin (compared exactly, as the browser writes
 * it) gets `Access-Control-Allow-Origin` naming that origin and the headers a client may read; its
 * preflight is answered 204 with the methods and request headers the API takes. Any other origin
 * gets no CORS header at all, so the browser keeps the answer from the page. No credentials mode:
 * the API authenticates with the Authorization header, never with cookies, so
 * `Access-Control-Allow-Credentials` is never sent. Every answer varies by `Origin` (a cache must
 * not hand one origin's answer to another).
 */

/** Request headers the API reads, which a console's fetch may send. */
export const CORS_ALLOWED_HEADERS = [
  'Authorization',
  'Content-Type',
  'DPoP',
  'If-Match',
  'If-None-Match',
  'X-Platform-Organisation',
  'X-Request-Id',
] as const;

/** Answer headers beyond the CORS-safelisted ones that a console may read. */
export const CORS_EXPOSED_HEADERS = [
  'DPoP-Nonce',
  'ETag',
  'Location',
  'RateLimit',
  'RateLimit-Policy',
  'Retry-After',
  'WWW-Authenticate',
  'X-Request-Id',
] as const;

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** How long (seconds) a browser may keep a preflight's answer. */
const PREFLIGHT_MAX_AGE_SECONDS = 600;

export function corsEdge(allowedOrigins: readonly string[]): RequestHandler | undefined {
  if (allowedOrigins.length === 0) return undefined;
  const allowed = new Set(allowedOrigins);
  const handler = cors({
    origin: (origin, callback) => callback(null, origin !== undefined && allowed.has(origin) ? origin : false),
    methods: METHODS,
    allowedHeaders: [...CORS_ALLOWED_HEADERS],
    exposedHeaders: [...CORS_EXPOSED_HEADERS],
    credentials: false,
    maxAge: PREFLIGHT_MAX_AGE_SECONDS,
    preflightContinue: false,
    optionsSuccessStatus: 204,
  });
  return (req: Request, res: Response, next: NextFunction) => {
    res.vary('Origin');
    handler(req, res, next);
  };
}
