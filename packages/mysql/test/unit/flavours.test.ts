import { describe, expect, it } from 'vitest';
import { GtidSet, MariadbGtidPosition, MysqlErrorCode } from '../../src/index.js';
import { createMariadbFlavour } from '../../src/mariadb-flavour.js';
import { createMysqlFlavour } from '../../src/mysql-flavour.js';

const A = '3e11fa47-71ca-11e1-9e33-c80aa9429562';
const B = '4e11fa47-71ca-11e1-9e33-c80aa9429562';

describe('MySQL flavour', () => {
  const flavour = createMysqlFlavour();

  it('reads the GTIDs of an OK packet, including the "\\n" mysql2 leaves after splitting at commas', () => {
    const position = flavour.positionFromOk({ gtids: [`${A}:5`, `\n${B}:1-2`] });
    expect(position?.format({ separator: ',' })).toBe(`${A}:5,${B}:1-2`);
    expect(flavour.positionFromOk({ gtids: [] })).toBeUndefined();
    expect(flavour.positionFromOk({ gtids: [''] })).toBeUndefined();
    expect(flavour.positionFromOk({ systemVariables: {} })).toBeUndefined();
    expect(flavour.positionFromOk(undefined)).toBeUndefined();
  });

  it('reads a probe row: replica applying, idle, stopped, and a node without a channel', () => {
    const base = { position: `${A}:1-10` };
    const applying = flavour.parseProbe([
      {
        ...base,
        applier_state: 'ON',
        receiver_state: 'ON',
        received_applied: 0,
        applying_lag: '0.250000',
        queued_lag: '0.1',
      },
    ]);
    expect(applying).toMatchObject({
      paused: false,
      receiving: true,
      replicating: true,
      ownLagSeconds: 0.25,
    });
    expect(applying.applied.equals(GtidSet.parse(`${A}:1-10`))).toBe(true);
    const idle = flavour.parseProbe([
      {
        ...base,
        applier_state: 'ON',
        receiver_state: 'ON',
        received_applied: 1,
        applying_lag: null,
        queued_lag: '100.5',
      },
    ]);
    expect(idle.ownLagSeconds).toBe(0);
    const stopped = flavour.parseProbe([
      {
        ...base,
        applier_state: 'OFF',
        receiver_state: 'ON',
        received_applied: 0,
        applying_lag: null,
        queued_lag: '3.5',
      },
    ]);
    expect(stopped).toMatchObject({ paused: true, ownLagSeconds: 3.5 });
    const primary = flavour.parseProbe([
      {
        ...base,
        applier_state: null,
        receiver_state: null,
        received_applied: null,
        applying_lag: null,
        queued_lag: null,
      },
    ]);
    expect(primary).toMatchObject({ replicating: false, paused: false, ownLagSeconds: 0 });
    expect(() => flavour.parseProbe([])).toThrow();
  });

  it('reads wait answers strictly: 0 reached, 1 timeout, anything else is an error', () => {
    expect(flavour.waitReached(0)).toBe(true);
    expect(flavour.waitReached(1)).toBe(false);
    expect(() => flavour.waitReached(null)).toThrow();
    expect(() => flavour.waitReached(-1)).toThrow();
  });

  it('judges history with the primary UUID, and defers while the primary still applies', () => {
    const primary = GtidSet.parse(`${A}:1-10,${B}:1-5`);
    const lost = GtidSet.parse(`${A}:11`);
    const forged = GtidSet.parse(`${B}:6`);
    expect(flavour.classify(primary, lost, { serverUuid: B, stillApplying: false })).toBe(
      'other-history',
    );
    expect(flavour.classify(primary, lost, { serverUuid: B, stillApplying: true })).toBe('ok');
    expect(flavour.classify(primary, forged, { serverUuid: B, stillApplying: true })).toBe(
      'impossible',
    );
    expect(() => flavour.classify(primary, lost, undefined)).toThrow(/not been probed/);
  });

  it('explains a session setup refused because gtid_mode is not ON', () => {
    const driver = Object.assign(
      new Error(
        "Variable 'session_track_gtids' can't be set to the value of 'GTID_MODE_IS_NOT_ON'",
      ),
      { errno: 1231 },
    );
    expect(flavour.explainSetupFailure(driver)).toMatchObject({
      code: MysqlErrorCode.PositionsUnavailable,
    });
    const other = new Error('connect ECONNREFUSED');
    expect(flavour.explainSetupFailure(other)).toBe(other);
  });

  it('formats positions on one line for the wait function', () => {
    expect(flavour.formatForServer(GtidSet.parse(`${A}:1-3,\n${B}:7`))).toBe(`${A}:1-3,${B}:7`);
  });
});

describe('MariaDB flavour', () => {
  const flavour = createMariadbFlavour();

  it('reads last_gtid from an OK packet', () => {
    expect(String(flavour.positionFromOk({ systemVariables: { last_gtid: '0-1-9' } }))).toBe(
      '0-1-9',
    );
    expect(flavour.positionFromOk({ systemVariables: { last_gtid: '' } })).toBeUndefined();
    expect(flavour.positionFromOk({ systemVariables: { autocommit: 'ON' } })).toBeUndefined();
    expect(flavour.positionFromOk({ gtids: [] })).toBeUndefined();
  });

  const status = (fields: Record<string, unknown>) => ({
    Slave_SQL_Running: 'Yes',
    Slave_IO_Running: 'Yes',
    Seconds_Behind_Master: 0,
    Gtid_IO_Pos: '0-1-10',
    ...fields,
  });

  it('reads the two results of a probe: position, then SHOW SLAVE STATUS', () => {
    const caughtUp = flavour.parseProbe([[{ position: '0-1-10' }], [status({})]]);
    expect(caughtUp).toMatchObject({
      replicating: true,
      paused: false,
      receiving: true,
      ownLagSeconds: 0,
    });
    const behind = flavour.parseProbe([
      [{ position: '0-1-8' }],
      [status({ Seconds_Behind_Master: 2 })],
    ]);
    expect(behind.ownLagSeconds).toBe(2);
    const stopped = flavour.parseProbe([
      [{ position: '0-1-8' }],
      [status({ Slave_SQL_Running: 'No', Seconds_Behind_Master: null })],
    ]);
    expect(stopped).toMatchObject({ paused: true, ownLagSeconds: undefined });
    const stoppedCaughtUp = flavour.parseProbe([
      [{ position: '0-1-10' }],
      [status({ Slave_SQL_Running: 'No', Seconds_Behind_Master: null })],
    ]);
    expect(stoppedCaughtUp).toMatchObject({ paused: true, ownLagSeconds: 0 });
    const primary = flavour.parseProbe([[{ position: '0-2-20' }], []]);
    expect(primary).toMatchObject({ replicating: false, paused: false, ownLagSeconds: 0 });
    expect(String(primary.applied)).toBe('0-2-20');
    expect(() => flavour.parseProbe([[{ position: '0-2-20' }]])).toThrow();
  });

  it('reads wait answers strictly: 0 reached, -1 timeout', () => {
    expect(flavour.waitReached(0)).toBe(true);
    expect(flavour.waitReached(-1)).toBe(false);
    expect(() => flavour.waitReached(1)).toThrow();
    expect(() => flavour.waitReached(null)).toThrow();
  });

  it('judges history with the primary server id', () => {
    const primary = MariadbGtidPosition.parse('0-2-105');
    const identity = { serverId: 2, stillApplying: false };
    expect(flavour.classify(primary, MariadbGtidPosition.parse('0-2-106'), identity)).toBe(
      'impossible',
    );
    expect(flavour.classify(primary, MariadbGtidPosition.parse('0-1-105'), identity)).toBe(
      'other-history',
    );
    expect(flavour.classify(primary, MariadbGtidPosition.parse('0-1-100'), identity)).toBe('ok');
    expect(() =>
      flavour.classify(primary, MariadbGtidPosition.parse('0-2-106'), undefined),
    ).toThrow(/not been probed/);
  });

  it('explains a session setup refused because the binary log is off', () => {
    const driver = new Error("Unknown system variable 'tidemark_binary_log_is_off'");
    expect(flavour.explainSetupFailure(driver)).toMatchObject({
      code: MysqlErrorCode.PositionsUnavailable,
    });
  });
});
