import { describe, expect, it } from 'vitest';
import { nodePosition, primaryPosition } from '../../src/rows.js';
import { waitForLsnSql } from '../../src/sql.js';

const geometry = { blockSize: 8192n, segmentSize: 16777216n, maxAlign: 8 };

describe('primaryPosition', () => {
  it('reads the timeline from the WAL file name and normalises the insert LSN', () => {
    expect(primaryPosition({ lsn: '0/313E018', wal_tli: '0000000A' }, geometry)).toEqual({
      timeline: 10,
      lsn: 0x313e000n,
    });
  });

  it('rejects rows it cannot read', () => {
    expect(() => primaryPosition(undefined, geometry)).toThrow(/does not understand/);
    expect(() => primaryPosition({ lsn: '0/1', wal_tli: null }, geometry)).toThrow();
    expect(() => primaryPosition({ lsn: '0/1', wal_tli: '00000000' }, geometry)).toThrow();
    expect(() => primaryPosition({ lsn: 'x', wal_tli: '00000001' }, geometry)).toThrow();
  });
});

describe('nodePosition', () => {
  const replica = { in_recovery: true, lsn: '0/5000000', wal_tli: null };

  it("uses the WAL receiver's timeline", () => {
    expect(nodePosition({ ...replica, received_tli: 3, checkpoint_tli: 2 }, 2, geometry)).toEqual({
      timeline: 3,
      lsn: 0x5000000n,
    });
  });

  it('falls back to the larger of the last seen and the checkpoint timeline while disconnected', () => {
    const row = { ...replica, received_tli: null, checkpoint_tli: 2 };
    expect(nodePosition(row, undefined, geometry).timeline).toBe(2);
    expect(nodePosition(row, 3, geometry).timeline).toBe(3);
    expect(nodePosition({ ...row, checkpoint_tli: 4 }, 3, geometry).timeline).toBe(4);
  });

  it('labels an observation row (no checkpoint timeline) with the last timeline seen while disconnected', () => {
    const row = { ...replica, received_tli: null };
    expect(nodePosition(row, 3, geometry).timeline).toBe(3);
    // Nothing seen yet: timeline 1, never above the real one.
    expect(nodePosition(row, undefined, geometry).timeline).toBe(1);
    expect(nodePosition({ ...row, received_tli: 5 }, 3, geometry).timeline).toBe(5);
  });

  it('reads a promoted node like a primary', () => {
    expect(
      nodePosition(
        { in_recovery: false, lsn: '0/6000028', wal_tli: '00000002', received_tli: null },
        1,
        geometry,
      ),
    ).toEqual({ timeline: 2, lsn: 0x6000000n });
  });
});

describe('waitForLsnSql', () => {
  it('inlines only validated LSNs and timeouts', () => {
    expect(waitForLsnSql('0/30314D0', 250)).toBe(
      "WAIT FOR LSN '0/30314D0' WITH (TIMEOUT '250ms', NO_THROW)",
    );
    expect(() => waitForLsnSql("0/0'; DROP TABLE t; --", 10)).toThrow();
    expect(() => waitForLsnSql('0/0', 0)).toThrow();
    expect(() => waitForLsnSql('0/0', 1.5)).toThrow();
  });
});
