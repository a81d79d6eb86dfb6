// One simulated replica-set member: its own applied copy of the primary's log, its collections,
// and the reads blocked on afterClusterTime until it applies far enough.

import { type BsonTimestamp, compareTimestamps } from './bson.js';

/** One entry of the simulated oplog: one insert command's documents. */
export interface OplogEntry {
  readonly ts: BsonTimestamp;
  /** `database.collection`. */
  readonly ns: string;
  readonly documents: ReadonlyArray<Record<string, unknown>>;
  /** Wall-clock ms when the primary wrote it; secondaries apply it `delayMs` later. */
  readonly wallMs: number;
}

export type MemberRole = 'primary' | 'secondary';

interface Waiter {
  readonly ts: BsonTimestamp;
  readonly resolve: (reached: boolean) => void;
  readonly timer: NodeJS.Timeout | undefined;
}

export class SimulatedMember {
  /** How many oplog entries this member has applied (a prefix of the primary's oplog). */
  appliedCount = 0;
  lastApplied: BsonTimestamp;
  lastAppliedWallMs: number;
  /** Replication delay in ms; only secondaries use it. */
  delayMs: number;
  paused = false;
  killed = false;
  private readonly collections = new Map<string, Record<string, unknown>[]>();
  private waiters: Waiter[] = [];

  constructor(
    readonly name: string,
    readonly role: MemberRole,
    readonly host: string,
    initial: BsonTimestamp,
    delayMs: number,
  ) {
    this.lastApplied = initial;
    this.lastAppliedWallMs = Date.now();
    this.delayMs = delayMs;
  }

  apply(entry: OplogEntry): void {
    const documents = this.collections.get(entry.ns) ?? [];
    // Documents are never updated in place, so members may share the decoded objects.
    for (const document of entry.documents) documents.push(document);
    this.collections.set(entry.ns, documents);
    this.appliedCount++;
    this.lastApplied = entry.ts;
    this.lastAppliedWallMs = entry.wallMs;
    this.wakeWaiters();
  }

  /** Documents whose top-level fields equal every field of `filter` (the simulator's only query). */
  find(ns: string, filter: Record<string, unknown>): Record<string, unknown>[] {
    const documents = this.collections.get(ns) ?? [];
    const keys = Object.keys(filter);
    return documents.filter((document) =>
      keys.every((key) => sameValue(document[key], filter[key])),
    );
  }

  hasApplied(ts: BsonTimestamp): boolean {
    return compareTimestamps(this.lastApplied, ts) >= 0;
  }

  /** Resolves true once `ts` is applied, false after `timeoutMs` (undefined: wait forever). */
  waitForApplied(ts: BsonTimestamp, timeoutMs: number | undefined): Promise<boolean> {
    if (this.hasApplied(ts)) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer =
        timeoutMs === undefined
          ? undefined
          : setTimeout(() => {
              this.waiters = this.waiters.filter((w) => w.timer !== timer);
              resolve(false);
            }, timeoutMs);
      this.waiters.push({ ts, resolve, timer });
    });
  }

  /** Fail every blocked read (the member was killed). */
  abortWaiters(): void {
    for (const waiter of this.waiters) {
      if (waiter.timer) clearTimeout(waiter.timer);
      waiter.resolve(false);
    }
    this.waiters = [];
  }

  private wakeWaiters(): void {
    const still: Waiter[] = [];
    for (const waiter of this.waiters) {
      if (this.hasApplied(waiter.ts)) {
        if (waiter.timer) clearTimeout(waiter.timer);
        waiter.resolve(true);
      } else {
        still.push(waiter);
      }
    }
    this.waiters = still;
  }
}

function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  // ObjectIds, Longs and the like: compare by their canonical string form.
  if (a !== null && b !== null && typeof a === 'object' && typeof b === 'object') {
    return String(a) === String(b) && a.constructor === b.constructor;
  }
  return false;
}
