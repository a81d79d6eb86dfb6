// After an election, time alone cannot tell a token's write from a rolled-back one: the new
// primary's clock runs past it either way. What tells them apart is the primary's oplog: a write
// that survived is still there, at its timestamp, with its term. This module remembers those
// verdicts and teaches the adapter's codec to use them.

import type { PositionCodec, PrimaryVerdict } from '@tidemark/core/adapter';
import {
  compareTimes,
  type MongoPosition,
  type MongoTime,
  mongoPositionCodec,
} from './position.js';

/** What the primary's oplog says about one write: still there, or lost in a rollback. */
export type HistoryVerdict = 'kept' | 'lost';

/** Looks up the oplog entry at `time` on the primary: its term, or undefined when none is there. */
export type OplogLookup = (time: MongoTime) => Promise<{ term: number } | 'absent' | 'truncated'>;

/** Verdicts remembered per position; old ones go first once the book is full. */
const MAX_VERDICTS = 10_000;

function key(position: MongoPosition): string {
  return `${position.time.t}.${position.time.i}.${position.term}`;
}

/**
 * Which positions from an earlier term are still in the primary's history. Filled by
 * {@link HistoryBook.classify} (one oplog lookup per distinct position, then remembered), read
 * synchronously by the codec's `compare`.
 */
export class HistoryBook {
  private readonly verdicts = new Map<string, HistoryVerdict>();

  constructor(private readonly lookup: OplogLookup) {}

  verdict(position: MongoPosition): HistoryVerdict | undefined {
    return this.verdicts.get(key(position));
  }

  /**
   * The router's check of a position against the primary (`classifyAgainstPrimary`). Same term,
   * or a position without a term: time decides. An earlier term: the primary's oplog decides,
   * and a time past the primary's is lost outright (every entry of an earlier term the primary
   * kept is older than its own term's first entry).
   *
   * The earlier term is looked at before the time: replicas are judged with this verdict against
   * a primary sample that may be older than the replica's, where `impossible` reads as "ahead of
   * the sample". A member still holding entries of the old term past the new primary's sample
   * (not rolled back yet) must come out `other-history`, not ahead.
   */
  async classify(primary: MongoPosition, required: MongoPosition): Promise<PrimaryVerdict> {
    const termed = required.term !== 0 && primary.term !== 0;
    if (termed && required.term < primary.term) return this.classifyEarlierTerm(primary, required);
    if (compareTimes(primary.time, required.time) < 0) return 'impossible';
    if (termed && required.term > primary.term) return 'impossible';
    return 'ok';
  }

  private async classifyEarlierTerm(
    primary: MongoPosition,
    required: MongoPosition,
  ): Promise<PrimaryVerdict> {
    if (compareTimes(primary.time, required.time) < 0) {
      this.remember(required, 'lost');
      return 'other-history';
    }
    const known = this.verdict(required);
    if (known) return known === 'kept' ? 'ok' : 'other-history';
    const entry = await this.lookup(required.time);
    // An entry aged out of the capped oplog cannot be checked; the election that could have lost
    // it is older than the whole oplog window, so treat it as kept rather than fail every read.
    const verdict: HistoryVerdict =
      entry === 'truncated' || (entry !== 'absent' && entry.term === required.term)
        ? 'kept'
        : 'lost';
    this.remember(required, verdict);
    return verdict === 'kept' ? 'ok' : 'other-history';
  }

  private remember(position: MongoPosition, verdict: HistoryVerdict): void {
    if (this.verdicts.size >= MAX_VERDICTS) {
      const oldest = this.verdicts.keys().next().value;
      if (oldest !== undefined) this.verdicts.delete(oldest);
    }
    this.verdicts.set(key(position), verdict);
  }
}

/**
 * The adapter's codec: {@link mongoPositionCodec} whose `compare` also knows history. A member
 * in a later term than the position covers it only once the primary's oplog confirmed the
 * position survived the election; until then it answers `behind`, which sends the router to the
 * primary check ({@link HistoryBook.classify}) before it trusts any member.
 */
export function historyAwareCodec(book: HistoryBook): PositionCodec<MongoPosition> {
  return {
    ...mongoPositionCodec,
    compare(applied, required) {
      const byTime = mongoPositionCodec.compare(applied, required);
      if (required.term === 0 || applied.term === 0 || applied.term === required.term) {
        return byTime;
      }
      // A member that never reached the position's term cannot hold it.
      if (applied.term < required.term) return 'behind';
      const verdict = book.verdict(required);
      if (verdict === 'lost') return 'other-history';
      return verdict === 'kept' ? byTime : 'behind';
    },
  };
}
