// Three things the adapter learns without a round trip come from command monitoring of the
// commands sent in a session (`lsid`): how many commands a read or write sent, which server ran
// a read, and the term a write's reply named. They share how a command is followed from its
// start to its reply; each says only which commands it wants and what it takes from them.

import type {
  CommandFailedEvent,
  CommandStartedEvent,
  CommandSucceededEvent,
  MongoClient,
} from 'mongodb';

/** Hex of a session id (`lsid.id`, a BSON Binary UUID). */
export function sessionKey(lsid: unknown): string | undefined {
  const id = (lsid as { id?: { buffer?: Uint8Array } } | undefined)?.id;
  return id?.buffer ? Buffer.from(id.buffer).toString('hex') : undefined;
}

/** What one follower of session commands wants from them. */
export interface SessionCommandFollower {
  /**
   * A cheap test run on every command before its session id is read (a hex conversion): false
   * when nothing is watched, or the command is of no interest.
   */
  interested(event: CommandStartedEvent): boolean;
  /** A command of the session `key` started; true to be told of its reply. */
  started(key: string, event: CommandStartedEvent): boolean;
  /** The reply of a command `started` asked for. */
  succeeded?(key: string, event: CommandSucceededEvent): void;
}

/** Follow the session commands of a client created with `monitorCommands: true`. */
export function followSessionCommands(client: MongoClient, follower: SessionCommandFollower): void {
  const awaitingReply = new Map<number, string>();
  client.on('commandStarted', (event: CommandStartedEvent) => {
    if (!follower.interested(event)) return;
    const key = sessionKey(event.command.lsid);
    if (key !== undefined && follower.started(key, event)) {
      awaitingReply.set(event.requestId, key);
    }
  });
  if (!follower.succeeded) return;
  const succeeded = follower.succeeded.bind(follower);
  client.on('commandSucceeded', (event: CommandSucceededEvent) => {
    const key = awaitingReply.get(event.requestId);
    if (key === undefined) return;
    awaitingReply.delete(event.requestId);
    succeeded(key, event);
  });
  client.on('commandFailed', (event: CommandFailedEvent) => {
    awaitingReply.delete(event.requestId);
  });
}
