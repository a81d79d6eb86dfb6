import { describe, expect, it } from 'vitest';
import { parseLsn } from '../../src/lsn.js';
import { parseHistoryFile, TimelineHistory } from '../../src/timeline-history.js';

// Text as PostgreSQL writes it: the child copies its parent's file, then a blank line and its own.
const TIMELINE_3_FILE =
  '1\t0/3000060\tno recovery target specified\n\n2\t0/5000148\tno recovery target specified\n';

describe('parseHistoryFile', () => {
  it('assigns each switch to the right child timeline', () => {
    expect(parseHistoryFile(3, TIMELINE_3_FILE)).toEqual([
      { timeline: 2, parent: 1, switchpoint: parseLsn('0/3000060') },
      { timeline: 3, parent: 2, switchpoint: parseLsn('0/5000148') },
    ]);
    expect(parseHistoryFile(2, '1\t0/3000060\tno recovery target specified\n')).toEqual([
      { timeline: 2, parent: 1, switchpoint: parseLsn('0/3000060') },
    ]);
  });

  it('accepts PostgreSQL 19 zero-padded LSNs and comments', () => {
    expect(parseHistoryFile(2, '# comment\n1\t0/03000060\tbefore 2000-01-01\n')).toEqual([
      { timeline: 2, parent: 1, switchpoint: 0x3000060n },
    ]);
  });

  it.each([
    ['empty', 2, ''],
    ['garbage', 2, 'hello\n'],
    ['bad lsn', 2, '1\t0/XYZ\treason\n'],
    ['parent not older', 2, '2\t0/3000060\treason\n'],
    ['out of order', 4, '2\t0/5000000\tr\n1\t0/3000000\tr\n'],
    ['timeline 1 has none', 1, '1\t0/3000060\tr\n'],
  ])('rejects %s', (_name, timeline, text) => {
    expect(() => parseHistoryFile(timeline, text)).toThrow();
  });
});

describe('TimelineHistory', () => {
  it('records a history file and answers shared limits along the path', () => {
    const history = new TimelineHistory();
    expect(history.knows(1)).toBe(true);
    expect(history.knows(3)).toBe(false);
    history.recordHistoryFile(3, TIMELINE_3_FILE);
    expect(history.knows(2)).toBe(true);
    expect(history.knows(3)).toBe(true);
    expect(history.get(3)).toEqual({ parent: 2, switchpoint: 0x5000148n });
    expect(history.sharedLimit(3, 3)).toBe((1n << 64n) - 1n);
    expect(history.sharedLimit(3, 2)).toBe(0x5000148n);
    // Timeline 1's WAL is shared only up to its own switch to 2.
    expect(history.sharedLimit(3, 1)).toBe(0x3000060n);
    // Not an ancestor: newer, or unknown.
    expect(history.sharedLimit(2, 3)).toBeUndefined();
    expect(history.sharedLimit(5, 1)).toBeUndefined();
    expect(history.entries().map(([timeline]) => timeline)).toEqual([2, 3]);
  });

  it('treats siblings as unrelated', () => {
    // 2 and 3 both branched off 1 (two promotions of replicas of the same primary).
    const history = new TimelineHistory([
      [2, { parent: 1, switchpoint: 100n }],
      [3, { parent: 1, switchpoint: 200n }],
    ]);
    expect(history.sharedLimit(3, 2)).toBeUndefined();
    expect(history.sharedLimit(3, 1)).toBe(200n);
  });

  it('poisons a timeline that is reported with two different switches', () => {
    const history = new TimelineHistory([[2, { parent: 1, switchpoint: 100n }]]);
    history.record(2, 1, 100n);
    expect(history.sharedLimit(2, 1)).toBe(100n);
    history.record(2, 1, 101n);
    expect(history.get(2)).toBeUndefined();
    expect(history.sharedLimit(2, 1)).toBeUndefined();
    expect(history.knows(2)).toBe(false);
  });

  it('rejects impossible switches', () => {
    const history = new TimelineHistory();
    expect(() => history.record(1, 0, 0n)).toThrow(RangeError);
    expect(() => history.record(2, 2, 0n)).toThrow(RangeError);
    expect(() => history.record(2.5, 1, 0n)).toThrow(RangeError);
    expect(() => history.record(2, 1, -1n)).toThrow();
  });
});
