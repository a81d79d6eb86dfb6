import type { TripCounter } from '@tidemark/core/adapter';
import { MysqlAdapterError, MysqlErrorCode } from './errors.js';

export type { TripCounter };

/**
 * Session state the server attached to an OK packet (CLIENT_SESSION_TRACK). mysql2 parses it
 * into `ResultSetHeader.stateChanges` but leaves it out of its type declarations.
 */
export interface SessionStateChanges {
  /** MySQL `session_track_gtids`: the set's text split at commas (later parts may start with "\n"). */
  readonly gtids?: readonly string[];
  /** Tracked system variables, e.g. MariaDB's `last_gtid`. */
  readonly systemVariables?: Readonly<Record<string, string>>;
}

/** What the adapter reads from one OK packet. */
export interface OkPacket {
  readonly serverStatus?: number;
  readonly stateChanges?: SessionStateChanges;
}

/** Server status flags of an OK packet (protocol constants). */
export const SERVER_STATUS_IN_TRANS = 0x0001;
export const SERVER_STATUS_AUTOCOMMIT = 0x0002;

/**
 * What the adapter observes on one driver connection. mysql2 runs commands one at a time (the
 * next is written only after the previous one's answer), so every command is one round trip.
 */
export class ConnectionTap {
  /** Counts the commands sent while set. */
  counter: TripCounter | undefined;
  /** Receives every OK packet while set, whichever API sent the statement. */
  onOk: ((ok: OkPacket) => void) | undefined;
  /** Status flags of the latest OK packet; result sets end in EOF packets, which do not count. */
  lastStatus: number | undefined;
  /** First connection-level error seen on this connection (it is unusable afterwards). */
  fatal: unknown;
}

/** The parts of mysql2's callback-API connection the tap hooks into. */
interface CoreConnection {
  addCommand(command: unknown): unknown;
  on(event: 'error', listener: (error: unknown) => void): unknown;
}

interface DriverCommand {
  on?: (event: 'result', listener: (result: unknown) => void) => unknown;
  constructor?: { name?: string };
}

const taps = new WeakMap<object, ConnectionTap>();
/** Commands the server does not answer: they cost no round trip. */
const UNANSWERED = new Set(['CloseStatement', 'Quit']);

/**
 * Hook a mysql2 connection (the callback-API object, `promiseConnection.connection`) once: count
 * its commands and pass every OK packet to the current listener. It hooks `addCommand`, which
 * every statement goes through, whether sent with the promise API, the callback API, `execute`
 * or `query`, so a caller cannot write past the observer by picking another path.
 *
 * @throws MysqlAdapterError `TIDEMARK_MYSQL_UNSUPPORTED_DRIVER` when mysql2's internals differ.
 */
export function tapConnection(connection: unknown): ConnectionTap {
  const core = connection as CoreConnection;
  const existing = taps.get(core);
  if (existing) return existing;
  if (
    core === null ||
    typeof core !== 'object' ||
    typeof core.addCommand !== 'function' ||
    typeof core.on !== 'function'
  ) {
    throw new MysqlAdapterError(
      MysqlErrorCode.UnsupportedDriver,
      'This mysql2 connection has no addCommand(); @tidemark/mysql needs mysql2 3.9 or newer (tested with 3.24). Install a supported mysql2 version.',
    );
  }
  const tap = new ConnectionTap();
  const addCommand = core.addCommand;
  core.addCommand = function tappedAddCommand(this: unknown, command: unknown) {
    const cmd = command as DriverCommand | null;
    if (tap.counter && !UNANSWERED.has(cmd?.constructor?.name ?? '')) tap.counter.roundTrips++;
    // Query and Execute emit 'result' with a ResultSetHeader for every OK packet, before the
    // caller's callback or promise sees the result.
    cmd?.on?.('result', (result) => {
      if (!isOkPacket(result)) return;
      if (typeof result.serverStatus === 'number') tap.lastStatus = result.serverStatus;
      tap.onOk?.(result);
    });
    return addCommand.call(this, command);
  };
  // An idle pooled connection that dies emits 'error'; mysql2's own listener is a `once`.
  core.on('error', (error) => {
    tap.fatal ??= error;
  });
  taps.set(core, tap);
  return tap;
}

function isOkPacket(value: unknown): value is OkPacket {
  // Rows streamed through 'result' are plain objects; OK packets are ResultSetHeader instances.
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { constructor?: { name?: string } }).constructor?.name === 'ResultSetHeader'
  );
}
