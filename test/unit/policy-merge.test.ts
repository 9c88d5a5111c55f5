import { createHash } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { DEFAULT_POLICY } from '../../policies/default-policy.js';
import { compile } from '../../src/http/schema.js';
import { canonicalJson, mergeOverride, revisionOf } from '../../src/modules/policy/merge.js';
import { policyDocumentSchema, policyOverrideSchema, type PolicyDocument } from '../../src/modules/policy/schemas.js';

const validateDocument = compile(policyDocumentSchema, 'body');
const validateOverride = compile(policyOverrideSchema, 'body');

const organisationPolicy: PolicyDocument = {
  ...structuredClone(DEFAULT_POLICY),
  settings: { theme: 'dark', editor: { tabSize: 2, wrap: true } },
  network: { ...DEFAULT_POLICY.network, allowHosts: ['registry.npmjs.org', 'github.com'], rules: [{ host: '*.internal.test', action: 'deny' }] },
};

describe('mergeOverride: objects merge key by key, everything else replaces', () => {
  it('changes only the fields the override names, at any depth', () => {
    const merged = mergeOverride(organisationPolicy, { dlp: { onSecrets: 'block' }, approvals: { remoteApprovals: { high: 'deny' } } });
    expect(merged.dlp).toEqual({ ...organisationPolicy.dlp, onSecrets: 'block' });
    expect(merged.approvals.remoteApprovals).toEqual({ low: 'allow', medium: 'ask', high: 'deny' });
    expect(merged.approvals.requireHumanReviewLabels).toEqual(organisationPolicy.approvals.requireHumanReviewLabels);
    expect(merged.tools).toEqual(organisationPolicy.tools);
  });

  it('replaces arrays whole: an override list is the list, not an addition to it', () => {
    const merged = mergeOverride(organisationPolicy, { network: { allowHosts: ['pypi.org'], rules: [] } });
    expect(merged.network.allowHosts).toEqual(['pypi.org']);
    expect(merged.network.rules).toEqual([]);
    expect(merged.network.denyHosts).toEqual(organisationPolicy.network.denyHosts);
  });

  it('merges free-form sections key by key too, and lets a value replace an object', () => {
    const merged = mergeOverride(organisationPolicy, { settings: { editor: { tabSize: 4 }, font: 'mono' } });
    expect(merged.settings).toEqual({ theme: 'dark', editor: { tabSize: 4, wrap: true }, font: 'mono' });
    expect(mergeOverride(organisationPolicy, { settings: { editor: 8 } }).settings).toEqual({ theme: 'dark', editor: 8 });
  });

  it('gives back the base unchanged for an empty override', () => {
    expect(mergeOverride(organisationPolicy, {})).toEqual(organisationPolicy);
  });

  it('changes neither input, and shares nothing with the override', () => {
    const base = structuredClone(organisationPolicy);
    const override = { network: { denyHosts: ['evil.test'] }, settings: { editor: { wrap: false } } };
    const merged = mergeOverride(base, override);
    expect(base).toEqual(organisationPolicy);
    expect(override).toEqual({ network: { denyHosts: ['evil.test'] }, settings: { editor: { wrap: false } } });
    override.network.denyHosts.push('later.test');
    override.settings.editor.wrap = true;
    expect(merged.network.denyHosts).toEqual(['evil.test']);
    expect(merged.settings).toEqual({ theme: 'dark', editor: { tabSize: 2, wrap: false } });
  });

  it('keeps a __proto__ key as a key and never touches a prototype', () => {
    const override = JSON.parse('{"settings":{"__proto__":{"polluted":true}}}') as unknown;
    const merged = mergeOverride(organisationPolicy, override);
    expect(Object.hasOwn(merged.settings, '__proto__')).toBe(true);
    expect(Object.getPrototypeOf(merged.settings)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('yields a valid document whenever a valid override meets a valid organisation policy', () => {
    const overrides: unknown[] = [
      {},
      { version: 1 },
      { allowedRuntimes: [] },
      { dlp: { classifier: { endpoint: 'https://classifier.internal.test/v1' } } },
      { approvals: { remoteApprovals: { low: 'deny' } }, remote: { allowTransports: ['ipc'] } },
      { tools: { defaults: { changes: 'ask' }, servers: [{ id: 'fs', name: 'Files', fingerprint: '', status: 'published', tools: { read: { kind: 'reads' } } }] } },
      { teams: { granted: [{ provider: 'acme-ai', team: 'platform', members: [] }] }, cloudAgents: { maxConcurrent: 1 } },
      { settingsMode: { theme: 'locked' }, inference: { temperature: 0 } },
    ];
    for (const override of overrides) {
      expect(validateOverride(override)).toBe(true);
      expect(validateDocument(mergeOverride(organisationPolicy, override))).toBe(true);
    }
  });
});

describe('the override schema', () => {
  it('takes any part of the document, and nothing the document would refuse', () => {
    expect(validateOverride({ dlp: { onPii: 'redact' } })).toBe(true);
    expect(validateOverride({ dlp: { onPii: 'shred' } })).toBe(false);
    expect(validateOverride({ dlp: { onPi: 'warn' } })).toBe(false);
    expect(validateOverride({ version: 2 })).toBe(false);
    expect(validateOverride({ cloudAgents: { maxConcurrent: 0 } })).toBe(false);
  });

  it('still wants whole array items, since an array replaces the organisation\'s', () => {
    expect(validateOverride({ network: { rules: [{ host: 'example.test', action: 'allow' }] } })).toBe(true);
    expect(validateOverride({ network: { rules: [{ host: 'example.test' }] } })).toBe(false);
    expect(validateOverride({ tools: { servers: [{ id: 'fs' }] } })).toBe(false);
  });

  it('leaves the document schema itself requiring every section', () => {
    const { cloudAgents: _dropped, ...incomplete } = DEFAULT_POLICY;
    expect(validateDocument(DEFAULT_POLICY)).toBe(true);
    expect(validateDocument(incomplete)).toBe(false);
    expect(validateDocument({ ...DEFAULT_POLICY, dlp: { onSecrets: 'block' } })).toBe(false);
  });
});

describe('canonicalJson and revisionOf', () => {
  it('writes keys sorted at every depth, arrays in order, no whitespace', () => {
    expect(canonicalJson({ b: [3, { z: 1, a: null }], a: { d: true, c: 'x' } })).toBe('{"a":{"c":"x","d":true},"b":[3,{"a":null,"z":1}]}');
  });

  it('sorts by UTF-16 code units and writes strings and numbers as JSON does (RFC 8785)', () => {
    expect(canonicalJson({ é: 1, a: 2, Z: 3, '\u{1F600}': 4, '\uFB33': 5 })).toBe('{"Z":3,"a":2,"é":1,"\u{1F600}":4,"\uFB33":5}');
    expect(canonicalJson([1e21, 0.1, -0, 'line\nbreak "quoted"'])).toBe('[1e+21,0.1,0,"line\\nbreak \\"quoted\\""]');
  });

  it('refuses what JSON cannot hold instead of hashing it away', () => {
    expect(() => canonicalJson({ a: Number.NaN })).toThrow(TypeError);
    expect(() => canonicalJson([undefined])).toThrow(TypeError);
  });

  it('gives equal documents equal revisions, whatever order their keys came in', () => {
    const reordered = Object.fromEntries(Object.entries(structuredClone(organisationPolicy)).reverse()) as PolicyDocument;
    reordered.dlp = Object.fromEntries(Object.entries(reordered.dlp).reverse()) as PolicyDocument['dlp'];
    expect(JSON.stringify(reordered)).not.toBe(JSON.stringify(organisationPolicy));
    expect(revisionOf(reordered)).toBe(revisionOf(organisationPolicy));
  });

  it('changes the revision with any change of value, including array order', () => {
    const base = revisionOf(organisationPolicy);
    expect(revisionOf(mergeOverride(organisationPolicy, { dlp: { latencyBudgetMs: 1501 } }))).not.toBe(base);
    expect(revisionOf(mergeOverride(organisationPolicy, { network: { allowHosts: ['github.com', 'registry.npmjs.org'] } }))).not.toBe(base);
  });

  it('is the base64url SHA-256 of the canonical text', () => {
    const expected = createHash('sha256').update('{"a":1,"b":[true]}', 'utf8').digest('base64url');
    expect(revisionOf({ b: [true], a: 1 })).toBe(expected);
    expect(expected).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });
});
