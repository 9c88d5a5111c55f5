import { describe, expect, it } from '@jest/globals';
import { configuredOrigin, parseHost } from '../../src/http/origin.js';

describe('parseHost', () => {
  it.each([
    ['a.test', 'a.test', undefined],
    ['A.Test:8080', 'a.test', 8080],
    ['localhost:1', 'localhost', 1],
    ['xn--bcher-kva.test', 'xn--bcher-kva.test', undefined],
    ['127.0.0.1:3000', '127.0.0.1', 3000],
    ['0.0.0.0', '0.0.0.0', undefined],
    ['[::1]', '[::1]', undefined],
    ['[0:0:0:0:0:0:0:1]:65535', '[::1]', 65535],
    ['[FE80::A]', '[fe80::a]', undefined],
    ['[::ffff:127.0.0.1]', '[::ffff:7f00:1]', undefined],
    ['1a.test', '1a.test', undefined],
  ])('reads %s as host %s, port %s', (value, hostname, port) => {
    expect(parseHost(value)).toEqual({ hostname, port });
  });

  it.each(['', 'a.test:65536', 'a.test:0', 'a.test:', 'a.test:01', 'a@b', 'a/b', 'a:1:2', '%61.test', '[::1', '::1', 'a..b', 'a.test.', '1.2.3', '0x7f.1', '1.2.3.04', '[::1]x', 'a\u00a0.test', 'ä.test'])(
    'refuses %p',
    (value) => {
      expect(parseHost(value)).toBeUndefined();
    },
  );
});

describe('configuredOrigin', () => {
  it('drops the default port and keeps another', () => {
    expect(configuredOrigin('https://api.platform.test').origin).toBe('https://api.platform.test');
    expect(configuredOrigin('http://localhost:3000')).toMatchObject({ scheme: 'http', hostname: 'localhost', port: 3000, origin: 'http://localhost:3000' });
  });
});
