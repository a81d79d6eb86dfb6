// The replica-set client follows elections by itself: a read sent "to the primary" runs on
// whichever member the driver believes is primary when it selects a server, which may be a
// member elected after the router last sampled the primary. A read's reply names no term, so
// this module finds it from two things the driver reports anyway: which server ran each command
// (command monitoring names its address) and the term each server announced as primary in its
// last heartbeat (`electionId`, else `lastWrite.opTime.t`). No extra round trip.

import type { MongoClient, ServerHeartbeatSucceededEvent } from 'mongodb';
import { followSessionCommands, sessionKey } from './session-commands.js';

/** mongod's election id under protocol version 1: `7fffffff` then the term in 16 hex digits. */
const PV1_ELECTION_ID = /^7fffffff([0-9a-f]{16})$/i;

/**
 * The term a heartbeat reply announces for a writable primary; undefined for any other member
 * (a secondary's newest entry may still be of an old term it is about to roll back).
 */
export function primaryTermOf(reply: Record<string, unknown>): number | undefined {
  if (reply['isWritablePrimary'] !== true && reply['ismaster'] !== true) return undefined;
  const terms: number[] = [];
  const electionId = reply['electionId'] as { toHexString?: () => string } | undefined;
  const match = PV1_ELECTION_ID.exec(electionId?.toHexString?.() ?? '');
  if (match) terms.push(Number.parseInt(match[1]!, 16));
  const lastWrite = reply['lastWrite'] as { opTime?: { t?: unknown } } | undefined;
  if (lastWrite?.opTime?.t !== undefined && lastWrite.opTime.t !== null) {
    terms.push(Number(lastWrite.opTime.t));
  }
  const known = terms.filter((term) => Number.isSafeInteger(term) && term > 0);
  return known.length === 0 ? undefined : Math.max(...known);
}

/** Which server ran each watched session's commands, and the term each server leads in. */
export class PrimaryTerms {
  private readonly termByAddress = new Map<string, number>();
  /** Address of the last command that succeeded, per watched session. */
  private readonly servedBy = new Map<string, string | undefined>();

  /** Listen on a client created with `monitorCommands: true` (each replacement client too). */
  listen(client: MongoClient): void {
    client.on('serverHeartbeatSucceeded', (event: ServerHeartbeatSucceededEvent) => {
      const address = event.connectionId.toLowerCase();
      const term = primaryTermOf(event.reply);
      if (term === undefined) this.termByAddress.delete(address);
      else this.termByAddress.set(address, term);
    });
    followSessionCommands(client, {
      interested: () => this.servedBy.size > 0,
      started: (key) => this.servedBy.has(key),
      succeeded: (key, event) => {
        if (this.servedBy.has(key)) this.servedBy.set(key, event.address.toLowerCase());
      },
    });
  }

  /** Start recording which server runs `lsid`'s commands. */
  watch(lsid: unknown): void {
    const key = sessionKey(lsid);
    if (key !== undefined) this.servedBy.set(key, undefined);
  }

  /**
   * The term of the primary that ran `lsid`'s last successful command, or undefined when that
   * is unknown (no command succeeded, or its server announced no term).
   */
  termOf(lsid: unknown): number | undefined {
    const key = sessionKey(lsid);
    const address = key === undefined ? undefined : this.servedBy.get(key);
    return address === undefined ? undefined : this.termByAddress.get(address);
  }

  /** Stop watching `lsid` (the driver pools session ids). */
  forget(lsid: unknown): void {
    const key = sessionKey(lsid);
    if (key !== undefined) this.servedBy.delete(key);
  }
}
