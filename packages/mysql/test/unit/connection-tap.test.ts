import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { type OkPacket, tapConnection } from '../../src/connection-tap.js';
import { MysqlErrorCode } from '../../src/index.js';

/** mysql2's OK packet class is named ResultSetHeader; the tap recognises it by that name. */
class ResultSetHeader {
  constructor(
    readonly serverStatus: number,
    readonly stateChanges?: OkPacket['stateChanges'],
  ) {}
}
class Query extends EventEmitter {}
class CloseStatement extends EventEmitter {}

/** A stand-in for mysql2's callback connection: commands are queued by addCommand. */
class FakeConnection extends EventEmitter {
  readonly added: unknown[] = [];
  addCommand(command: unknown): unknown {
    this.added.push(command);
    return command;
  }
}

describe('tapConnection', () => {
  it('counts answered commands, forwards OK packets and remembers the last status', () => {
    const connection = new FakeConnection();
    const tap = tapConnection(connection);
    expect(tapConnection(connection)).toBe(tap);
    const counter = { operations: 0, roundTrips: 0 };
    const seen: OkPacket[] = [];
    tap.counter = counter;
    tap.onOk = (ok) => seen.push(ok);
    const query = new Query();
    connection.addCommand(query);
    connection.addCommand(new CloseStatement());
    expect(counter.roundTrips).toBe(1);
    expect(connection.added).toHaveLength(2);
    // A streamed row is not an OK packet.
    query.emit('result', { serverStatus: 99, id: 1 });
    query.emit('result', new ResultSetHeader(3, { gtids: ['x'] }));
    expect(seen).toHaveLength(1);
    expect(tap.lastStatus).toBe(3);
    tap.counter = undefined;
    connection.addCommand(new Query());
    expect(counter.roundTrips).toBe(1);
  });

  it('keeps a dying idle connection from crashing the process', () => {
    const connection = new FakeConnection();
    const tap = tapConnection(connection);
    const error = new Error('gone');
    expect(() => connection.emit('error', error)).not.toThrow();
    expect(tap.fatal).toBe(error);
  });

  it('refuses a driver it cannot hook into', () => {
    expect(() => tapConnection({})).toThrow(
      expect.objectContaining({ code: MysqlErrorCode.UnsupportedDriver }),
    );
  });
});
