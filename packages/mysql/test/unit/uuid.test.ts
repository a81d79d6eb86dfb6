import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { normalizeUuid, uuidFromBase64Url, uuidToBase64Url } from '../../src/uuid.js';

describe('UUID <-> base64url', () => {
  it('matches Node base64url both ways for random UUIDs', () => {
    fc.assert(
      fc.property(fc.uuid({ version: [1, 2, 3, 4, 5, 6, 7, 8] }), (uuid) => {
        const canonical = normalizeUuid(uuid);
        const expected = Buffer.from(canonical.replaceAll('-', ''), 'hex').toString('base64url');
        expect(uuidToBase64Url(canonical)).toBe(expected);
        expect(uuidFromBase64Url(expected)).toBe(canonical);
      }),
      { numRuns: 300 },
    );
  });

  it('gives every UUID exactly one spelling: non-zero padding bits are refused', () => {
    const text = uuidToBase64Url('ffffffff-ffff-ffff-ffff-ffffffffffff');
    expect(text).toBe('_____________________w');
    // 'w' carries the last 2 bits and 4 zero bits; '_' would set the padding bits too.
    expect(uuidFromBase64Url('______________________')).toBeUndefined();
    expect(uuidFromBase64Url('_____________________x')).toBeUndefined();
    // Node's lenient decoder maps both spellings to the same bytes: that is what we refuse.
    expect(Buffer.from('_____________________x', 'base64url').toString('hex')).toBe('f'.repeat(32));
  });

  it('refuses wrong lengths and characters outside the alphabet', () => {
    expect(uuidFromBase64Url('A'.repeat(21))).toBeUndefined();
    expect(uuidFromBase64Url('A'.repeat(23))).toBeUndefined();
    expect(uuidFromBase64Url(`${'A'.repeat(20)}=A`)).toBeUndefined();
    expect(uuidFromBase64Url(`${'A'.repeat(20)}+A`)).toBeUndefined();
    expect(uuidFromBase64Url('A'.repeat(22))).toBe('00000000-0000-0000-0000-000000000000');
  });
});
