import type { ReplicaViewChannel } from '@tidemark/core';

/**
 * Take the lease when free, extend it when the caller holds it: one round trip, atomic, so two
 * instances can never both believe they hold it after the same call.
 */
const LEAD = `
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if holder == false then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
`;

const RESIGN = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`;

/** A connection in subscriber mode (an ioredis `Redis` from `duplicate()`). */
export interface RedisSubscriber {
  subscribe(channel: string): Promise<unknown>;
  unsubscribe(channel: string): Promise<unknown>;
  on(event: 'message', listener: (channel: string, message: string) => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
  quit(): Promise<unknown>;
  disconnect(): void;
}

/** The Redis commands the channel uses; an ioredis `Redis` satisfies it. */
export interface RedisViewCommands {
  eval(script: string, numKeys: number, ...args: Array<string | number>): Promise<unknown>;
  publish(channel: string, message: string): Promise<unknown>;
  /** A second connection for pub/sub (a subscribed connection can run no other command). */
  duplicate(): RedisSubscriber;
}

/**
 * The channel of a shared replica view (`Router` option `sharedView`) over Redis: the lease is a
 * key set with `PX` by a script (`<scope>:lease`), samples go out with `PUBLISH` on
 * `<scope>:samples`. Give every router of the app the same Redis the token store uses; the
 * subscriber connection is opened on the first subscription and closed with the last one.
 *
 * @example
 * const router = new Router({
 *   adapter,
 *   cluster: 'main',
 *   sharedView: { channel: redisReplicaViewChannel(redis) },
 * });
 */
export function redisReplicaViewChannel(redis: RedisViewCommands): ReplicaViewChannel {
  return new RedisReplicaViewChannel(redis);
}

class RedisReplicaViewChannel implements ReplicaViewChannel {
  private subscriber: RedisSubscriber | undefined;
  /** Listeners per pub/sub channel name, and the SUBSCRIBE each one's first listener sent. */
  private readonly topics = new Map<
    string,
    { listeners: Set<(message: string) => void>; ready: Promise<unknown> }
  >();

  constructor(private readonly redis: RedisViewCommands) {}

  async lead(scope: string, owner: string, ttlMs: number): Promise<boolean> {
    const held = await this.redis.eval(LEAD, 1, `${scope}:lease`, owner, Math.ceil(ttlMs));
    return held === 1;
  }

  async resign(scope: string, owner: string): Promise<void> {
    await this.redis.eval(RESIGN, 1, `${scope}:lease`, owner);
  }

  async publish(scope: string, message: string): Promise<void> {
    await this.redis.publish(`${scope}:samples`, message);
  }

  async subscribe(
    scope: string,
    listener: (message: string) => void,
  ): Promise<() => Promise<void>> {
    const name = `${scope}:samples`;
    let topic = this.topics.get(name);
    if (!topic) {
      const subscriber = this.connection();
      topic = { listeners: new Set(), ready: subscriber.subscribe(name) };
      this.topics.set(name, topic);
    }
    // A retry after a timed-out call passes the same listener: a set keeps it once.
    topic.listeners.add(listener);
    const current = topic;
    try {
      await current.ready;
    } catch (error) {
      // Forget the failed SUBSCRIBE so that the next call sends a new one.
      if (this.topics.get(name) === current) this.topics.delete(name);
      current.listeners.delete(listener);
      throw error;
    }
    return async () => {
      current.listeners.delete(listener);
      if (current.listeners.size > 0 || this.topics.get(name) !== current) return;
      this.topics.delete(name);
      const subscriber = this.subscriber;
      if (!subscriber) return;
      if (this.topics.size === 0) {
        this.subscriber = undefined;
        await subscriber.quit().catch(() => subscriber.disconnect());
      } else {
        await subscriber.unsubscribe(name);
      }
    };
  }

  private connection(): RedisSubscriber {
    if (this.subscriber) return this.subscriber;
    const subscriber = this.redis.duplicate();
    // Errors surface through the calls (and the view's timeouts); an unhandled 'error' event
    // would crash the process.
    subscriber.on('error', () => undefined);
    subscriber.on('message', (channel, message) => {
      for (const listener of this.topics.get(channel)?.listeners ?? []) listener(message);
    });
    this.subscriber = subscriber;
    return subscriber;
  }
}
