import { describe, expect, it } from 'vitest';
import { checkHistory } from '../../src/checker.js';
import type { Failover, History, Operation } from '../../src/history.js';
import { Prng, parseSeed } from '../../src/prng.js';

/** A session's operations in order, one per 10 ms. */
function session(id: number, steps: ReadonlyArray<Partial<Operation> & Pick<Operation, 'kind'>>) {
  return steps.map(
    (step, index): Operation => ({
      session: id,
      index,
      start: index * 10,
      end: index * 10 + 5,
      generation: 1,
      ok: true,
      ...step,
    }),
  );
}

const write = (id: number, extra: Partial<Operation> = {}) =>
  ({ kind: 'write', writeId: id, ...extra }) as const;
const read = (rows: number[], extra: Partial<Operation> = {}) =>
  ({ kind: 'read', rows, ...extra }) as const;
const otherHistory = { kind: 'read', ok: false, lostReport: 'other-history' } as const;

function failover(absent: number[], crashAt: number, readyAt = crashAt + 5): Failover {
  return {
    index: 1,
    kind: 'crash-promote',
    oldPrimary: 'n0',
    promoted: 'n1',
    crashAt,
    readyAt,
    absent,
  };
}

function history(
  operations: Operation[],
  failovers: Failover[] = [],
  finalAbsent: number[] = [],
): History {
  return { operations, failovers, finalAbsent };
}

describe('checkHistory', () => {
  it('passes a history where every read shows the session’s acknowledged writes', () => {
    const result = checkHistory(
      history([
        ...session(1, [write(1), read([1]), write(2), read([2, 1])]),
        ...session(2, [read([]), write(3), read([3])]),
      ]),
    );
    expect(result.anomalies).toBe(0);
    expect(result.checkedReads).toBe(4);
    expect(result.lostWritesStaged).toBe(0);
  });

  it('flags a read that misses an acknowledged write of its session', () => {
    const result = checkHistory(history(session(1, [write(1), write(2), read([1])])));
    expect(result.anomalies).toBe(1);
    expect(result.byClass['missed-own-write']).toBe(1);
    expect(result.details[0]?.detail).toContain('2');
  });

  it('does not judge a write that failed (it was never acknowledged)', () => {
    const result = checkHistory(
      history(session(1, [write(1, { ok: false, errorClass: 'availability' }), read([])])),
    );
    expect(result.anomalies).toBe(0);
  });

  it('flags reads that go backwards, also for rows of unacknowledged writes', () => {
    const result = checkHistory(
      history(session(1, [write(7, { ok: false, errorClass: 'timeout' }), read([7]), read([])])),
    );
    expect(result.byClass['read-went-backwards']).toBe(1);
    expect(result.byClass['missed-own-write']).toBe(0);
    expect(result.anomalies).toBe(1);
  });

  it('counts one anomaly per read even when it shows several classes', () => {
    const result = checkHistory(history(session(1, [write(1), read([1]), read([])])));
    expect(result.byClass['missed-own-write']).toBe(1);
    expect(result.byClass['read-went-backwards']).toBe(1);
    expect(result.anomalies).toBe(1);
  });

  it('judges only the window a full page of rows could show', () => {
    const page = Array.from({ length: 21 }, (_, i) => 201 - i); // 201..181, 190 left out below
    const older = session(1, [write(50), write(190), read(page.filter((id) => id !== 190))]);
    const result = checkHistory(history(older));
    // 50 is below the page: a full page cannot show it. 190 is inside: missing is a miss.
    expect(result.anomalies).toBe(1);
    expect(result.details[0]?.detail).toContain('190');
    expect(result.details[0]?.detail).not.toContain('50');
  });

  it('excuses a lost write once the session was told, and counts it reported', () => {
    // ops at 0, 10, 20, 30; the crash at 12 loses write 1 (acknowledged at 5).
    const ops = session(1, [write(1), read([1]), otherHistory, read([])]);
    const result = checkHistory(history(ops, [failover([1], 12)]));
    expect(result.anomalies).toBe(0);
    expect(result.lostWritesStaged).toBe(1);
    expect(result.lostWritesReported).toBe(1);
  });

  it('flags a lost write nobody reported, and counts it unreported', () => {
    const ops = session(1, [write(1), read([1]), read([])]);
    const result = checkHistory(history(ops, [failover([1], 12)]));
    expect(result.byClass['missed-own-write']).toBe(1);
    expect(result.lostWritesStaged).toBe(1);
    expect(result.lostWritesReported).toBe(0);
  });

  it('does not take a report from before the crash for the later loss', () => {
    // The report (ends at 15) comes before the crash at 22 that loses write 1.
    const ops = session(1, [write(1), otherHistory, read([1]), read([])]);
    const result = checkHistory(history(ops, [failover([1], 22)]));
    expect(result.lostWritesReported).toBe(0);
    expect(result.byClass['missed-own-write']).toBe(1);
  });

  it('does not take a later report for a loss the session had already moved past', () => {
    // Lost at the crash (12, app ready at 14); the read at 20 is served as fresh without row 1;
    // the report at 30 comes too late for that loss (the session had moved on).
    const ops = session(1, [write(1), read([1]), read([]), otherHistory, read([])]);
    const result = checkHistory(history(ops, [failover([1], 12, 14)]));
    expect(result.lostWritesReported).toBe(0);
    expect(result.lostWrites[0]?.howMissed).toBe('read-served ?/?');
    expect(result.anomalies).toBe(2); // the read at 20 and the read at 40
  });

  it('ignores successful operations of the old configuration before the report', () => {
    // The crash at 7 loses write 1; the app's new configuration is in service at 25. The read
    // at 10 still ran on the old configuration (a replica that had the row); the report at 30
    // is the first word of the new one.
    const ops = session(1, [write(1), read([1]), read([1]), otherHistory, read([])]);
    const result = checkHistory(history(ops, [failover([1], 7, 25)]));
    expect(result.lostWritesReported).toBe(1);
    expect(result.anomalies).toBe(0);
  });

  it('takes a report on the read after a silent write (the write kept the lost position)', () => {
    const ops = session(1, [write(1), write(2), otherHistory, read([2])]);
    const result = checkHistory(history(ops, [failover([1], 7, 8)]));
    expect(result.lostWritesReported).toBe(1);
    expect(result.anomalies).toBe(0);
  });

  it('counts a lost-write outcome on a later write as the report', () => {
    const ops = session(1, [write(1), write(2, { lostReport: 'lost-write' }), read([2])]);
    const result = checkHistory(history(ops, [failover([1], 7)]));
    expect(result.anomalies).toBe(0);
    expect(result.lostWritesReported).toBe(1);
  });

  it('flags a lost row served after the new configuration was in service', () => {
    // The failover loses write 1; the app's new router is ready at 15; the read at 20 shows 1.
    const ops = session(1, [write(1), otherHistory, read([1])]);
    const result = checkHistory(history(ops, [failover([1], 8, 15)]));
    expect(result.byClass['lost-row-served']).toBe(1);
  });

  it('flags an acknowledged write missing at the end without any failover', () => {
    const result = checkHistory(history(session(1, [write(1), read([1])]), [], [1]));
    expect(result.byClass['write-vanished']).toBe(1);
    expect(result.lostWritesStaged).toBe(1);
    expect(result.lostWritesReported).toBe(0);
  });

  it('counts loss reports to sessions that lost nothing', () => {
    const result = checkHistory(history(session(1, [write(1), otherHistory, read([1])])));
    expect(result.reportsWithoutLoss).toBe(1);
    expect(result.anomalies).toBe(0);
  });

  it('keeps sessions apart', () => {
    const result = checkHistory(
      history([...session(1, [write(1), read([1])]), ...session(2, [read([])])]),
    );
    expect(result.anomalies).toBe(0);
  });
});

describe('Prng', () => {
  it('replays the same sequence for the same seed', () => {
    const a = new Prng(42);
    const b = new Prng(42);
    const seqA = Array.from({ length: 5 }, () => a.nextUint32());
    expect(Array.from({ length: 5 }, () => b.nextUint32())).toEqual(seqA);
    expect(new Prng(43).nextUint32()).not.toBe(seqA[0]);
  });

  it('parses numeric and word seeds', () => {
    expect(parseSeed('123')).toBe(123);
    expect(parseSeed('nightly')).toBe(parseSeed('nightly'));
    expect(Number.isInteger(parseSeed(undefined))).toBe(true);
  });
});

describe('checkHistory: how an unreported loss was missed', () => {
  it('tells a write-first session from a read served as fresh', () => {
    const writeFirst = session(1, [write(1), write(2), read([2])]);
    const readFirst = session(2, [write(3), read([], { target: 'n2', reason: 'replica-covered' })]);
    const oldHistory = session(3, [
      write(4),
      read([4], { target: 'n1', reason: 'replica-covered' }),
    ]);
    const result = checkHistory(
      history([...writeFirst, ...readFirst, ...oldHistory], [failover([1, 3, 4], 7, 8)]),
    );
    const how = Object.fromEntries(result.lostWrites.map((w) => [w.writeId, w.howMissed]));
    expect(how).toEqual({
      1: 'write-first, then read-served ?/?',
      3: 'read-served n2/replica-covered',
      4: 'read-showed-lost-row n1/replica-covered',
    });
  });
});
