// A replica-set member's reply to a write names the write's optime, term included
// (`opTime: { ts, t }`), but the driver keeps only `operationTime` on the session. Command
// monitoring sees the whole reply; this records the term per session, so a write's position
// carries the term it was written in without any extra round trip.

import type { MongoClient } from 'mongodb';
import { followSessionCommands, sessionKey } from './session-commands.js';

const WRITE_COMMANDS = new Set(['insert', 'update', 'delete', 'findAndModify', 'bulkWrite']);

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
  private readonly bySession = new Map<string, number>();

  /** Listen on a client created with `monitorCommands: true` (each replacement client too). */
  listen(client: MongoClient): void {
    followSessionCommands(client, {
      interested: (event) => WRITE_COMMANDS.has(event.commandName),
      started: () => true,
      succeeded: (key, event) => {
        const term = termOf(event.reply);
        if (term === undefined) return;
        this.bySession.set(key, term);
        this.newest = Math.max(this.newest, term);
      },
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
