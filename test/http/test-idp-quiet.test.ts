import { afterEach, describe, expect, it, jest } from '@jest/globals';
import { TestIdentityProvider, withoutExpectedWarnings } from '../support/idp.js';

/**
 * `npm test` prints results and real failures only: the test identity provider's warnings that
 * the suites chose (its development login pages) are left out, and no other warning is.
 */
afterEach(() => {
  jest.restoreAllMocks();
});

describe('the test identity provider', () => {
  it('starts with its development login pages without a warning', async () => {
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    const idp = await TestIdentityProvider.start({ interactive: { redirectUris: ['http://127.0.0.1:9/callback'] } });
    try {
      await idp.rotateKeys();
      expect(warn).not.toHaveBeenCalled();
    } finally {
      await idp.close();
    }
  });

  it('still prints any other warning', () => {
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    withoutExpectedWarnings(() => {
      console.warn('oidc-provider WARNING: a quick start development-only feature devInteractions is enabled, you are expected to…');
      console.warn('oidc-provider WARNING: something else');
    });
    expect(warn.mock.calls).toEqual([['oidc-provider WARNING: something else']]);
    // Only while the provider is built.
    console.warn('oidc-provider WARNING: a quick start development-only feature devInteractions is enabled');
    expect(warn).toHaveBeenCalledTimes(2);
  });
});
