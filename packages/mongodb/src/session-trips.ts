import type { TripCounter } from '@tidemark/core/adapter';
import type { ClientSession, MongoClient } from 'mongodb';
import { followSessionCommands, sessionKey } from './session-commands.js';

/**
 * Counts the commands each read or write sends in its session: command monitoring names the
 * session of every command (`lsid`), and the driver sends one command per round trip. Probes
 * and heartbeats run outside these sessions and are not counted here.
 */
export class SessionTrips {
  private readonly counters = new Map<string, TripCounter>();

  /** Listen on a client created with `monitorCommands: true`. */
  listen(client: MongoClient): void {
    followSessionCommands(client, {
      interested: () => this.counters.size > 0,
      started: (key) => {
        const counter = this.counters.get(key);
        if (counter) counter.roundTrips++;
        return false;
      },
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
