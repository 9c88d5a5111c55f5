import { randomUUID } from 'node:crypto';
import type { ErrorRequestHandler, NextFunction, Request, RequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import { redactUrl } from '../log-redaction.js';
import { isDatabaseUnavailable, isSchemaMissing, reasonOf } from '../db/errors.js';
import { ApiError, notFound, schemaNotMigrated, unavailable } from '../errors.js';
import { clientErrorOf, sendJson } from './errors.js';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Runs `layers` one after the other as one Express layer, as a router would run them at one path
 * (an error, thrown or passed to `next`, or a rejected promise goes to `next` and skips the rest),
 * without a router's per-layer work (path matching, parameter processing): the edge's steps and
 * each route's chain run on every request. `next('route')` and `next('router')` are not
 * supported and are refused as errors; nothing here uses them.
 */
export function inSequence(layers: readonly RequestHandler[]): RequestHandler {
  const list = [...layers];
  if (list.length === 1) return list[0]!;
  return (req: Request, res: Response, next: NextFunction) => {
    let index = 0;
    const step = (error?: unknown): void => {
      if (error !== undefined && error !== null) {
        next(error === 'route' || error === 'router' ? new Error(`inSequence: next('${error}') is not supported`) : error);
        return;
      }
      const layer = list[index++];
      if (layer === undefined) {
        next();
        return;
      }
      // One call per layer: a layer calling `next` twice must not run the rest twice.
      let called = false;
      const once = (value?: unknown): void => {
        if (called) return;
        called = true;
        step(value);
      };
      try {
        const result = layer(req, res, once as NextFunction);
        if (result instanceof Promise) result.catch((failure: unknown) => once(failure ?? new Error('rejected')));
      } catch (failure) {
        once(failure);
      }
    };
    step();
  };
}

/** Told of every request once its answer is written (metrics): how long it took, in seconds. */
export type FinishObserver = (req: Request, res: Response, seconds: number) => void;

/**
 * The first step of every request: its id (`X-Request-Id`: a well-formed one from the caller is
 * kept, anything else replaced; always echoed), its context, and one `finish` listener that tells
 * `observe` (metrics) and writes the log line. The listener is one function shared by every
 * response (the start time is in the request's context), so a request allocates no closure and
 * no `once` wrapper for it.
 */
export function requestEdge(logger: Logger, observe: FinishObserver): RequestHandler {
  function finished(this: Response): void {
    const req = this.req;
    const milliseconds = performance.now() - req.context.startedAt;
    observe(req, this, milliseconds / 1000);
    logCompleted(logger, req, this, milliseconds);
  }
  return (req: Request, res: Response, next: NextFunction) => {
    const incoming = req.headers['x-request-id'];
    const id = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    req.context = { requestId: id, origin: undefined, tenant: undefined, principal: undefined, startedAt: performance.now() };
    req.log = logger;
    res.setHeader('X-Request-Id', id);
    res.on('finish', finished);
    next();
  };
}

/**
 * One log line per request, when it finishes: `debug` for successes, `info` for refusals,
 * `error` for failures. The entry (and its redaction) is only built when its level is enabled,
 * so a busy service logging at `info` spends nothing on the requests that went well. The
 * headers go in as received: the logger redacts every line as it is written
 * (src/log-redaction.ts), credentials of any header included.
 */
function logCompleted(logger: Logger, req: Request, res: Response, milliseconds: number): void {
  const level = res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'info' : 'debug';
  if (!logger.isLevelEnabled(level)) return;
  logger[level](
    {
      req: {
        id: req.context.requestId,
        method: req.method,
        url: redactUrl(req.originalUrl),
        headers: req.headers,
        remoteAddress: req.socket.remoteAddress,
      },
      res: { statusCode: res.statusCode },
      responseTime: Math.round(milliseconds * 1000) / 1000,
    },
    'request completed',
  );
}

export function notFoundHandler(): RequestHandler {
  return (_req: Request, _res: Response, next: NextFunction) => next(notFound('no such route'));
}

/**
 * The last layer: every error becomes the spec's error body; nothing internal leaks. Refusals
 * (ApiError, and any error carrying a 4xx status) keep their status; everything else is a bug
 * or a dependency failing: logged with its stack, answered 500 `internal_error` without detail.
 */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (error: unknown, req: Request, res: Response, _next: NextFunction) => {
    let apiError = error instanceof ApiError ? error : clientErrorOf(error);
    if (!apiError && isDatabaseUnavailable(error)) {
      // An outage, not a bug: one line without a stack, 503 `unavailable` with Retry-After.
      logger.warn({ dependency: 'database', requestId: req.context?.requestId, ...reasonOf(error) }, 'database not reachable; request refused');
      apiError = unavailable('the database');
    } else if (!apiError && isSchemaMissing(error)) {
      // Migrations pending (or a table dropped): one line without a stack, 503 `unavailable`.
      logger.warn({ dependency: 'database', requestId: req.context?.requestId, ...reasonOf(error) }, 'database schema older than this build; request refused');
      apiError = schemaNotMigrated();
    }
    if (!apiError) {
      logger.error({ err: error, requestId: req.context?.requestId }, 'unexpected failure');
      apiError = new ApiError(500, 'internal_error', 'something went wrong on our side; quote the X-Request-Id when reporting it');
    }
    if (res.headersSent) return;
    res.set(apiError.headers);
    sendJson(res, apiError.status, apiError.toJSON());
  };
}

/**
 * A middleware whose every answer header is the same whatever the request (helmet with fixed
 * settings), run once at start-up against a recording response: each request then gets the
 * recorded `setHeader` / `removeHeader` calls, in order, from one function instead of a chain of
 * seven. Refuses, at start-up, a middleware that does anything else or does not call `next`.
 */
export function hoistedHeaders(middleware: RequestHandler): RequestHandler {
  const calls: ({ set: string; value: string | number | readonly string[] } | { remove: string })[] = [];
  const recorder = {
    setHeader: (name: string, value: string | number | readonly string[]) => {
      calls.push({ set: name, value });
      return recorder;
    },
    removeHeader: (name: string) => {
      calls.push({ remove: name });
    },
    getHeader: () => undefined,
  };
  let passed = false;
  middleware({ headers: {}, method: 'GET', url: '/', secure: false } as unknown as Request, recorder as unknown as Response, ((error?: unknown) => {
    if (error) throw error instanceof Error ? error : new Error(String(error));
    passed = true;
  }) as NextFunction);
  if (!passed) throw new Error('hoistedHeaders: the middleware did not pass the request on at once');
  return (_req: Request, res: Response, next: NextFunction) => {
    for (const call of calls) {
      if ('set' in call) res.setHeader(call.set, call.value);
      else res.removeHeader(call.remove);
    }
    next();
  };
}
