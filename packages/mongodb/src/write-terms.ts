// A replica-set member's reply to a write names the write's optime, term included
// (`opTime: { ts, t }`), but the driver keeps only `operationTime` on the session. Command
// monitoring sees the whole reply; this records the term per session, so a write's position
// carries the term it was written in without any extra round trip.

import type {
  CommandFailedEvent,
  CommandStartedEvent,
  CommandSucceededEvent,
  MongoClient,
} from 'mongodb';

const WRITE_COMMANDS = new Set(['insert', 'update', 'delete', 'findAndModify', 'bulkWrite']);

/** Hex of a session id (`lsid.id`, a BSON Binary UUID). */
export function sessionKey(lsid: unknown): string | undefined {
  const id = (lsid as { id?: { buffer?: Uint8Array } } | undefined)?.id;
  return id?.buffer ? Buffer.from(id.buffer).toString('hex') : undefined;
}

function termOf(reply: unknown): number | undefined {
  const opTime = (reply as { opTime?: { t?: unknown } } | undefined)?.opTime;
  if (opTime?.t === undefined || opTime.t === null) return undefined;
  const term = Number(opTime.t);
  return Number.isSafeInteger(term) && term >= 0 ? term : undefined;
}

/** Terms of the latest acknowledged write per session, from command monitoring. */
export class WriteTerms {
  /** Newest term any write reply named. */
  newest = 0;
  private readonly pending = new Map<number, string>();
  private readonly bySession = new Map<string, number>();

  /** Listen on a client created with `monitorCommands: true` (each replacement client too). */
  listen(client: MongoClient): void {
    client.on('commandStarted', (event: CommandStartedEvent) => {
      if (!WRITE_COMMANDS.has(event.commandName)) return;
      const key = sessionKey(event.command.lsid);
      if (key !== undefined) this.pending.set(event.requestId, key);
    });
    client.on('commandSucceeded', (event: CommandSucceededEvent) => {
      const key = this.pending.get(event.requestId);
      if (key === undefined) return;
      this.pending.delete(event.requestId);
      const term = termOf(event.reply);
      if (term === undefined) return;
      this.bySession.set(key, term);
      this.newest = Math.max(this.newest, term);
    });
    client.on('commandFailed', (event: CommandFailedEvent) => {
      this.pending.delete(event.requestId);
    });
  }

  /** The term of the session's latest write, forgotten once taken (the driver pools session ids). */
  take(lsid: unknown): number | undefined {
    const key = sessionKey(lsid);
    if (key === undefined) return undefined;
    const term = this.bySession.get(key);
    this.bySession.delete(key);
    return term;
  }
}
