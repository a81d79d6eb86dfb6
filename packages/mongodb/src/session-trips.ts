import type { TripCounter } from '@tidemark/core/adapter';
import type { ClientSession, CommandStartedEvent, MongoClient } from 'mongodb';
import { sessionKey } from './write-terms.js';

/**
 * Counts the commands each read or write sends in its session: command monitoring names the
 * session of every command (`lsid`), and the driver sends one command per round trip. Probes
 * and heartbeats run outside these sessions and are not counted here.
 */
export class SessionTrips {
  private readonly counters = new Map<string, TripCounter>();

  /** Listen on a client created with `monitorCommands: true`. */
  listen(client: MongoClient): void {
    client.on('commandStarted', (event: CommandStartedEvent) => {
      if (this.counters.size === 0) return;
      const key = sessionKey(event.command.lsid);
      const counter = key === undefined ? undefined : this.counters.get(key);
      if (counter) counter.roundTrips++;
    });
  }

  start(session: ClientSession, counter: TripCounter): void {
    const key = sessionKey(session.id);
    if (key !== undefined) this.counters.set(key, counter);
  }

  stop(session: ClientSession): void {
    const key = sessionKey(session.id);
    if (key !== undefined) this.counters.delete(key);
  }
}
