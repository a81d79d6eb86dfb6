import { afterEach, describe, expect, it } from 'vitest';
import { createPgAdapter, type PgAdapter } from '../../src/index.js';

// The verdict needs no server: pools connect lazily and are never used here.
let adapter: PgAdapter;
afterEach(() => adapter?.close());

function fresh(): PgAdapter {
  adapter = createPgAdapter({
    primary: 'postgres://nobody@127.0.0.1:1/none',
    replicas: { r1: 'postgres://nobody@127.0.0.1:1/none' },
  });
  // Timeline 2 branched off timeline 1 at 0/5000.
  adapter.history.record(2, 1, 0x5000n);
  return adapter;
}

describe('classifyAgainstPrimary', () => {
  const primary = { timeline: 2, lsn: 0x9000n };

  it('a position on a timeline above the primary is impossible, not a lost write', () => {
    const verdict = fresh().classifyAgainstPrimary?.(primary, { timeline: 3, lsn: 0x10n });
    expect(verdict).toBe('impossible');
  });

  it('past the switch point on the old timeline is another history (lost in the failover)', () => {
    expect(fresh().classifyAgainstPrimary?.(primary, { timeline: 1, lsn: 0x6000n })).toBe(
      'other-history',
    );
  });

  it('before the switch point, or behind on the same timeline, is ok', () => {
    const a = fresh();
    expect(a.classifyAgainstPrimary?.(primary, { timeline: 1, lsn: 0x4000n })).toBe('ok');
    expect(a.classifyAgainstPrimary?.(primary, { timeline: 2, lsn: 0x8000n })).toBe('ok');
  });

  it('ahead of the primary on its own timeline is impossible', () => {
    expect(fresh().classifyAgainstPrimary?.(primary, { timeline: 2, lsn: 0xa000n })).toBe(
      'impossible',
    );
  });
});
