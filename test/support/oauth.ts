import { expect } from '@jest/globals';
import type { Response } from 'supertest';

/**
 * An OAuth error answer (RFC 6749 5.2, RFC 8628 3.5, RFC 9449): 400 with the `error` code and an
 * `error_description`, which matches `message` when given.
 */
export function expectOauthError(res: Response, error: string, message?: RegExp): void {
  expect(res.status).toBe(400);
  expect(res.body.error).toBe(error);
  expect(typeof res.body.error_description).toBe('string');
  if (message) expect(res.body.error_description).toMatch(message);
}
