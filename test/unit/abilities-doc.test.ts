import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { computeAbilityMatrix, declaredRoutes, renderAbilityMatrix, renderRoutePermissions } from '../../src/cli/abilities.js';

/**
 * docs/security/abilities.md is what `npm run abilities` prints: the role × action × subject
 * matrix computed from the CASL rules in `policies/`, then what each route declares. A change to
 * a rule or a route fails this test until the copy says the same; UPDATE_DOCS=1 rewrites it.
 */

const DOC = join(import.meta.dirname, '..', '..', 'docs', 'security', 'abilities.md');

describe('docs/security/abilities.md', () => {
  it('is what `npm run abilities` prints', async () => {
    const expected = `${renderAbilityMatrix(computeAbilityMatrix())}\n${renderRoutePermissions(await declaredRoutes())}`;
    const current = readFileSync(DOC, 'utf8');
    if (current !== expected && process.env.UPDATE_DOCS === '1') {
      writeFileSync(DOC, expected);
      return;
    }
    expect(current).toBe(expected);
  });
});
