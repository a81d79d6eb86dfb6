import { ConfigError, type TokenData } from '@tidemark/core';
import type { PositionCodec, ReplicaMonitor } from '@tidemark/core/adapter';
import { decodeEntry, encodeEntry } from './entry.js';
import { RedisErrorCode, RedisStoreError } from './errors.js';
import { mergePositions } from './merge.js';
import { COMPARE_AND_DELETE, COMPARE_AND_SET } from './scripts.js';

/** The Redis commands the store uses; an ioredis `Redis` (or `Cluster`) satisfies it. */
export interface RedisCommands {
  get(key: string): Promise<string | null>;
  eval(script: string, numKeys: number, ...args: Array<string | number>): Promise<unknown>;
}

/** What the drop check needs of a router: a `Router` from @tidemark/core satisfies it. */
export interface ClusterView {
  readonly cluster: string;
  readonly monitor: Pick<ReplicaMonitor<unknown>, 'states'>;
}

export interface RedisTokenStoreOptions {
  redis: RedisCommands;
  /** Position codec per cluster name (`{ [router.cluster]: adapter.codec }`). */
  codecs: Readonly<Record<string, PositionCodec<unknown>>>;
  /**
   * Seconds an entry lives after its last raise. Use the same lifetime as the cookies
   * (`tokenLifetimeSeconds()` from @tidemark/http): after it the token protects nothing.
   */
  ttlSeconds: number;
  /** Default `tidemark:token:`. */
  keyPrefix?: string;
  /** Compare-and-set attempts before giving up with a retryable error. Default 50. */
  maxAttempts?: number;
  /** Clock for issuedAt, in ms. Default Date.now. */
  now?: () => number;
}

/** Outcome of {@link RedisTokenStore.dropIfApplied}. */
export type DropOutcome =
  /** Every replica of every cluster had applied the entry; it was deleted. */
  | 'dropped'
  /** Some replica has not applied it yet (or cannot be checked); kept. */
  | 'pending'
  /** A concurrent raise changed the entry between the check and the delete; kept. */
  | 'changed'
  /** No entry. */
  | 'absent';

/**
 * Server-side token store keyed by user, so a write on one device protects the reads of every
 * device of that user. Raises merge per cluster with the adapter's codec (in Node: Redis cannot
 * compare positions) and commit with a compare-and-set script, retried on conflict: a concurrent
 * raise from another device is never lost and never lowers the stored token.
 */
export class RedisTokenStore {
  readonly codecs: Readonly<Record<string, PositionCodec<unknown>>>;
  private readonly redis: RedisCommands;
  private readonly ttlSeconds: number;
  private readonly keyPrefix: string;
  private readonly maxAttempts: number;
  private readonly now: () => number;
  private conflicts = 0;

  constructor(options: RedisTokenStoreOptions) {
    this.redis = options.redis;
    this.codecs = options.codecs;
    if (!(Number.isInteger(options.ttlSeconds) && options.ttlSeconds > 0)) {
      throw new ConfigError(
        `ttlSeconds must be a positive integer, got ${String(options.ttlSeconds)}.`,
      );
    }
    this.ttlSeconds = options.ttlSeconds;
    this.keyPrefix = options.keyPrefix ?? 'tidemark:token:';
    this.maxAttempts = options.maxAttempts ?? 50;
    if (!(Number.isInteger(this.maxAttempts) && this.maxAttempts > 0)) {
      throw new ConfigError(
        `maxAttempts must be a positive integer, got ${String(this.maxAttempts)}.`,
      );
    }
    this.now = options.now ?? Date.now;
  }

  /** The user's stored token, or undefined when there is none (or it expired). */
  async get(userId: string): Promise<TokenData | undefined> {
    const text = await this.redis.get(this.key(userId));
    return text === null ? undefined : decodeEntry(text);
  }

  /**
   * Merge `positions` into the user's stored token and reset its TTL. Returns the stored token
   * after the merge (which may hold more than `positions`: other devices' writes). Positions of
   * clusters without a codec are dropped: nothing here could merge them safely.
   */
  async raise(userId: string, positions: Readonly<Record<string, string>>): Promise<TokenData> {
    const key = this.key(userId);
    const known = Object.fromEntries(
      Object.entries(positions).filter(([cluster]) => this.codecs[cluster] !== undefined),
    );
    for (let attempt = 0; attempt < this.maxAttempts; attempt++) {
      const before = await this.redis.get(key);
      const stored = before === null ? {} : safePositions(before);
      const merged = mergePositions(stored, known, this.codecs);
      const data: TokenData = { positions: merged, issuedAt: Math.floor(this.now() / 1000) };
      if (before !== null && samePositions(stored, merged)) {
        // Nothing new: keep the entry (and its TTL) as it is, no write.
        return decodeEntry(before);
      }
      const written = await this.redis.eval(
        COMPARE_AND_SET,
        1,
        key,
        before ?? '',
        encodeEntry(data),
        this.ttlSeconds,
      );
      if (written === 1) return data;
      this.conflicts++;
      // Another device raised first: back off a little (jittered) and merge again.
      await delay(Math.random() * Math.min(20, 1 + attempt * 2));
    }
    throw new RedisStoreError(
      RedisErrorCode.Contention,
      `Could not raise the stored token of user ${JSON.stringify(userId)} after ${this.maxAttempts} attempts: too many concurrent raises. Retry, or raise maxAttempts.`,
      true,
    );
  }

  /**
   * Delete the user's entry once every replica of every cluster it names has applied it (per the
   * routers' monitors, whose view only moves forward), with a compare-and-delete so a raise that
   * lands between the check and the delete is kept. Unreachable or unknown replicas keep it.
   */
  async dropIfApplied(userId: string, clusters: readonly ClusterView[]): Promise<DropOutcome> {
    const key = this.key(userId);
    const text = await this.redis.get(key);
    if (text === null) return 'absent';
    const { positions } = decodeEntry(text);
    for (const [cluster, position] of Object.entries(positions)) {
      const codec = this.codecs[cluster];
      const view = clusters.find((candidate) => candidate.cluster === cluster);
      if (!codec || !view) return 'pending';
      let required: unknown;
      try {
        required = codec.decode(position);
      } catch {
        continue; // A position that does not decode protects nothing.
      }
      const applied = view.monitor
        .states()
        .every(
          (state) =>
            state.applied !== undefined && codec.compare(state.applied, required) === 'covered',
        );
      if (!applied) return 'pending';
    }
    const deleted = await this.redis.eval(COMPARE_AND_DELETE, 1, key, text);
    return deleted === 1 ? 'dropped' : 'changed';
  }

  /** Compare-and-set conflicts since the store was created (contention between devices). */
  get conflictCount(): number {
    return this.conflicts;
  }

  private key(userId: string): string {
    if (typeof userId !== 'string' || userId.length === 0 || userId.length > 256) {
      throw new ConfigError('userId must be a non-empty string of at most 256 characters.');
    }
    return this.keyPrefix + userId;
  }
}

/** Stored positions, or none when the entry is corrupt (a raise then overwrites it). */
function safePositions(text: string): Readonly<Record<string, string>> {
  try {
    return decodeEntry(text).positions;
  } catch {
    return {};
  }
}

function samePositions(
  a: Readonly<Record<string, string>>,
  b: Readonly<Record<string, string>>,
): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => a[key] === b[key]);
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
