import { describe, expect, it } from '@jest/globals';
import { networkOf, sameNetwork } from '../../src/web/device-approval/network.js';
import { accentProblem, contrastRatio, logoUrlProblem } from '../../src/web/device-approval/look.js';
import { relativeTime } from '../../src/web/device-approval/times.js';

describe('the approval page\'s network rule', () => {
  it.each([
    ['198.51.100.7', '198.51.100.250', true],
    ['198.51.100.7', '198.51.101.7', false],
    ['::ffff:198.51.100.7', '198.51.100.9', true],
    ['2001:db8:1::1', '2001:db8:1:ffff::2', true],
    ['2001:db8:1::1', '2001:db8:2::1', false],
    ['2001:0db8:0001:0000::1', '2001:db8:1::5', true],
    ['198.51.100.7', '2001:db8::1', false],
    [null, '198.51.100.7', false],
    ['not an address', 'not an address', false],
  ])('%s and %s: same network %s', (device, approver, same) => {
    expect(sameNetwork(device, approver)).toBe(same);
  });

  it('reads IPv6 networks as their first 48 bits', () => {
    expect(networkOf('2001:db8::')).toBe('6:2001:0db8:0000');
    expect(networkOf('::1')).toBe('6:0000:0000:0000');
    expect(networkOf('1:2:3:4:5:6:7:8:9')).toBeUndefined();
  });
});

describe('the approval page\'s look', () => {
  it('takes an accent only when white text on it reaches 4.5:1', () => {
    expect(contrastRatio('#000000', '#ffffff')).toBeCloseTo(21);
    expect(accentProblem('#1f5fbf')).toBeUndefined();
    expect(accentProblem('#ffcc00')).toMatch(/contrast of 1\.\d+:1, below 4\.5:1/);
    expect(accentProblem('blue')).toMatch(/hex colour/);
  });

  it('takes a logo only as an image data: URL or a path of this service', () => {
    expect(logoUrlProblem('data:image/png;base64,iVBORw0KGgo=')).toBeUndefined();
    expect(logoUrlProblem('/static/logo.svg')).toBeUndefined();
    for (const refused of ['https://cdn.example/logo.png', '//cdn.example/logo.png', 'data:text/html,<b>', 'javascript:alert(1)', '/\\evil.example', 'data:image/svg+xml,<svg onload="x">']) {
      expect(logoUrlProblem(refused)).toBeDefined();
    }
  });

  it('says times relative to now', () => {
    const now = new Date('2026-11-27T12:00:00Z');
    expect(relativeTime(new Date('2026-11-27T11:59:00Z'), now)).toBe('1 minute ago');
    expect(relativeTime(new Date('2026-11-27T12:09:00Z'), now)).toBe('in 9 minutes');
    expect(relativeTime(new Date('2026-11-27T11:59:50Z'), now)).toBe('just now');
  });
});
