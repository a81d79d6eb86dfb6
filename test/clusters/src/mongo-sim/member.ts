// One simulated replica-set member: how much of the primary's log it holds and has applied, its
// collections, and the reads blocked on afterClusterTime until it applies far enough.

import { type BsonTimestamp, compareTimestamps } from './bson.js';

/** One entry of the simulated oplog: one insert command's documents, or a no-op. */
export interface OplogEntry {
  readonly ts: BsonTimestamp;
  /** Election term of the primary that wrote it. */
  readonly term: number;
  /** `i` insert, `n` no-op (the entry a new primary writes when its term starts). */
  readonly op: 'i' | 'n';
  /** `database.collection`; empty for no-ops. */
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
  /**
   * How many entries it holds in its own oplog, applied or not. Majority write acknowledgement
   * counts these: pausing replay stops applying, not receiving.
   */
  receivedCount = 0;
  lastApplied: BsonTimestamp;
  /** Term of the last applied entry. */
  lastAppliedTerm: number;
  lastAppliedWallMs: number;
  /** Replication delay in ms; only secondaries use it. */
  delayMs: number;
  paused = false;
  /** Stopped or crashed: its port is closed and it receives nothing. */
  down = false;
  /** Cut off from the primary: it serves reads but receives nothing new. */
  cutOff = false;
  /**
   * Left on an old history by a promotion that did not re-point it: its own copy of the log it
   * held (entries the new primary may never have had). It follows nobody until it rejoins.
   */
  branch: OplogEntry[] | undefined;
  /** Frozen (a SIGSTOPped process): its port accepts connections, nothing is answered. */
  private frozen: { promise: Promise<void>; release: () => void } | undefined;
  role: MemberRole;
  private collections = new Map<string, Record<string, unknown>[]>();
  private waiters: Waiter[] = [];

  constructor(
    readonly name: string,
    role: MemberRole,
    readonly host: string,
    delayMs: number,
    first: OplogEntry,
  ) {
    this.role = role;
    this.delayMs = delayMs;
    this.lastApplied = first.ts;
    this.lastAppliedTerm = first.term;
    this.lastAppliedWallMs = first.wallMs;
    this.apply(first);
    this.receivedCount = 1;
  }

  apply(entry: OplogEntry): void {
    if (entry.op === 'i') {
      const documents = this.collections.get(entry.ns) ?? [];
      // Documents are never updated in place, so members may share the decoded objects.
      for (const document of entry.documents) documents.push(document);
      this.collections.set(entry.ns, documents);
    }
    this.appliedCount++;
    this.lastApplied = entry.ts;
    this.lastAppliedTerm = entry.term;
    this.lastAppliedWallMs = entry.wallMs;
    this.wakeWaiters();
  }

  /**
   * Rollback: forget every entry past the first `keep` of `history` (the new primary's log)
   * and rebuild the collections from what is left, as a member on a lost branch does when it
   * rejoins the set.
   */
  truncateTo(history: readonly OplogEntry[], keep: number): void {
    if (this.appliedCount <= keep) {
      this.receivedCount = Math.min(this.receivedCount, keep);
      return;
    }
    this.collections = new Map();
    this.appliedCount = 0;
    for (const entry of history.slice(0, Math.min(keep, history.length))) this.apply(entry);
    this.receivedCount = this.appliedCount;
  }

  /** Documents whose top-level fields equal every field of `filter` (the simulator's only query). */
  find(ns: string, filter: Record<string, unknown>): Record<string, unknown>[] {
    return matching(this.collections.get(ns) ?? [], filter);
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

  get isFrozen(): boolean {
    return this.frozen !== undefined;
  }

  freeze(): void {
    if (this.frozen) return;
    let release = () => {};
    const promise = new Promise<void>((resolve) => {
      release = resolve;
    });
    this.frozen = { promise, release };
  }

  thaw(): void {
    this.frozen?.release();
    this.frozen = undefined;
  }

  /** Resolves at once, or when a frozen member is thawed (or goes down). */
  untilThawed(): Promise<void> {
    return this.frozen?.promise ?? Promise.resolve();
  }

  /** Fail every blocked read (the member went down). */
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

/** Documents whose top-level fields equal every field of `filter`. */
export function matching(
  documents: readonly Record<string, unknown>[],
  filter: Record<string, unknown>,
): Record<string, unknown>[] {
  const keys = Object.keys(filter);
  return documents.filter((document) => keys.every((key) => sameValue(document[key], filter[key])));
}

function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  // ObjectIds, Longs, Timestamps and the like: compare by their canonical string form.
  if (a !== null && b !== null && typeof a === 'object' && typeof b === 'object') {
    return String(a) === String(b) && a.constructor === b.constructor;
  }
  return false;
}
