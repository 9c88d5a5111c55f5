import { describe, expect, it } from '@jest/globals';
import type { Request } from 'express';
import { configuredOrigin, InvalidAuthority, originFromRequest, parseHost } from '../../src/http/origin.js';

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

describe('originFromRequest', () => {
  const request = (rawHeaders: string[], remoteAddress = '10.0.0.1') => ({ url: '/policy/v1', rawHeaders, socket: { remoteAddress, encrypted: false } }) as unknown as Request;
  const trustNone = () => false;
  const trustAll = () => true;

  it('reads Host, and the forwarded headers only from a trusted peer', () => {
    const headers = ['Host', 'a.test:8080', 'X-Forwarded-Host', 'public.test', 'X-Forwarded-Proto', 'https'];
    expect(originFromRequest(request(headers), trustNone)).toMatchObject({ scheme: 'http', hostname: 'a.test', port: 8080, origin: 'http://a.test:8080', source: 'request' });
    expect(originFromRequest(request(headers), trustAll)).toMatchObject({ scheme: 'https', hostname: 'public.test', origin: 'https://public.test' });
  });

  it('refuses a repeated Host always, a repeated forwarded header only from a trusted peer', () => {
    expect(() => originFromRequest(request(['host', 'a.test', 'HOST', 'b.test']), trustNone)).toThrow(InvalidAuthority);
    const forwarded = ['Host', 'a.test', 'x-forwarded-host', 'b.test', 'X-Forwarded-Host', 'c.test'];
    expect(originFromRequest(request(forwarded), trustNone).origin).toBe('http://a.test');
    expect(() => originFromRequest(request(forwarded), trustAll)).toThrow('more than one x-forwarded-host header');
    expect(() => originFromRequest(request(['Host', 'a.test', 'X-Forwarded-Proto', 'http', 'x-forwarded-proto', 'https']), trustAll)).toThrow('more than one x-forwarded-proto header');
  });

  it('answers the same after many distinct authorities as before them (its memory of authorities is bounded)', () => {
    const first = originFromRequest(request(['Host', 'kept.test']), trustNone);
    expect(originFromRequest(request(['Host', 'kept.test']), trustNone)).toEqual(first);
    for (let index = 0; index < 2_500; index++) originFromRequest(request(['Host', `host-${index}.test`]), trustNone);
    for (let index = 0; index < 2_500; index++) expect(() => originFromRequest(request(['Host', `bad_${index}.test`]), trustNone)).toThrow(InvalidAuthority);
    expect(originFromRequest(request(['Host', 'kept.test']), trustNone)).toEqual(first);
    expect(originFromRequest(request(['Host', 'host-7.test:81']), trustNone).origin).toBe('http://host-7.test:81');
    expect(() => originFromRequest(request(['Host', 'bad_7.test']), trustNone)).toThrow('the Host header is not a valid host name and port');
    expect(Object.isFrozen(first)).toBe(true);
  });

  it('refuses an authority longer than any host name and port, however often it is sent', () => {
    const longest = `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(61)}`;
    expect(longest).toHaveLength(253);
    expect(originFromRequest(request(['Host', `${longest}:65535`]), trustNone).origin).toBe(`http://${longest}:65535`);
    const tooLong = `${longest}.${'e'.repeat(20)}:8080`;
    for (let attempt = 0; attempt < 3; attempt++) {
      expect(() => originFromRequest(request(['Host', tooLong]), trustNone)).toThrow('the Host header is not a valid host name and port');
      expect(() => originFromRequest(request(['Host', 'x'.repeat(10_000)]), trustNone)).toThrow('the Host header is not a valid host name and port');
    }
  });
});
