import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { toRecordEnd, type WalGeometry } from '../../src/wal-geometry.js';

const geometry: WalGeometry = { blockSize: 8192n, segmentSize: 16n * 1024n * 1024n, maxAlign: 8 };

describe('toRecordEnd', () => {
  it('maps positions right after a page header to the page boundary (measured case)', () => {
    // PostgreSQL 15: commit record ended at 0/313E000, pg_current_wal_insert_lsn() said 0/313E018.
    expect(toRecordEnd(0x313e018n, geometry)).toBe(0x313e000n);
    // Segment start: long header (40 bytes).
    expect(toRecordEnd(0x4000028n, geometry)).toBe(0x4000000n);
  });

  it('leaves every other position alone', () => {
    expect(toRecordEnd(0x313e000n, geometry)).toBe(0x313e000n);
    expect(toRecordEnd(0x313e020n, geometry)).toBe(0x313e020n);
    // 24 bytes into a segment's first page is inside the long header, not after a short one.
    expect(toRecordEnd(0x4000018n, geometry)).toBe(0x4000018n);
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: (1n << 40n) - 1n }), (lsn) => {
        const mapped = toRecordEnd(lsn, geometry);
        const inPage = lsn % geometry.blockSize;
        if (inPage !== 24n && inPage !== 40n) expect(mapped).toBe(lsn);
        expect(lsn - mapped === 0n || lsn - mapped === 24n || lsn - mapped === 40n).toBe(true);
      }),
    );
  });

  it('does nothing when the layout is unknown or not 8-byte aligned', () => {
    expect(toRecordEnd(0x313e018n, undefined)).toBe(0x313e018n);
    expect(toRecordEnd(0x313e018n, { ...geometry, maxAlign: 4 })).toBe(0x313e018n);
  });
});
