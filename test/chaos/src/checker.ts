// The checker: one pass over the whole history of a campaign. Pure: no clock, no database.
import { type Failover, type History, type Operation, READ_LIMIT } from './history.js';

export type AnomalyClass =
  /** A read missed a write its session had acknowledged before the read started. */
  | 'missed-own-write'
  /** A read missed a row an earlier read of the same session had shown. */
  | 'read-went-backwards'
  /** A read that started after a failover's new configuration showed a row lost in it. */
  | 'lost-row-served'
  /** An acknowledged write is missing from the final primary although no failover lost it. */
  | 'write-vanished';

export const ANOMALY_CLASSES: readonly AnomalyClass[] = [
  'missed-own-write',
  'read-went-backwards',
  'lost-row-served',
  'write-vanished',
];

export interface Anomaly {
  readonly class: AnomalyClass;
  readonly session: number;
  /** The operation's index in its session. */
  readonly index: number;
  /** ms since the campaign start (the read's start, or the write's end). */
  readonly at: number;
  /** Where the read went: `target/reason` of its route decision. */
  readonly route?: string;
  readonly detail: string;
}

export interface LostWrite {
  readonly session: number;
  readonly writeId: number;
  /** Index of the failover that lost it; undefined when it vanished without one. */
  readonly failover: number | undefined;
  readonly reported: boolean;
  /**
   * For an unreported loss: how the session moved past it, from its first successful read under
   * the new configuration: `read-served <route>` (served as fresh without the lost rows),
   * `read-showed-lost-row <route>` (served from another history), prefixed `write-first, then`
   * when a successful write came before it; `write-first` or `no-operation` when no read did.
   */
  readonly howMissed?: string;
}

export interface CheckResult {
  /** Operations with at least one anomaly (a read may show several classes at once). */
  readonly anomalies: number;
  readonly byClass: Readonly<Record<AnomalyClass, number>>;
  /** Every anomaly, in time order. */
  readonly details: readonly Anomaly[];
  readonly checkedReads: number;
  /** Acknowledged writes really absent from the primary after a failover (or at the end). */
  readonly lostWritesStaged: number;
  /** Of those, the ones whose session was told (after the loss) that a write was lost. */
  readonly lostWritesReported: number;
  readonly lostWrites: readonly LostWrite[];
  /** Loss reports to sessions that had lost nothing (not an anomaly; worth knowing). */
  readonly reportsWithoutLoss: number;
}

/** Most missing ids quoted per anomaly. */
const QUOTED = 5;

interface Loss {
  readonly failover: Failover | undefined;
}

export function checkHistory(history: History): CheckResult {
  // Where each id was lost: the first failover whose new primary lacked it, else the end.
  const losses = new Map<number, Loss>();
  const failovers = [...history.failovers].sort((a, b) => a.index - b.index);
  for (const failover of failovers) {
    for (const id of failover.absent) if (!losses.has(id)) losses.set(id, { failover });
  }
  for (const id of history.finalAbsent)
    if (!losses.has(id)) losses.set(id, { failover: undefined });

  const bySession = new Map<number, Operation[]>();
  for (const op of history.operations) {
    let list = bySession.get(op.session);
    if (!list) {
      list = [];
      bySession.set(op.session, list);
    }
    list.push(op);
  }

  const details: Anomaly[] = [];
  const byClass = Object.fromEntries(ANOMALY_CLASSES.map((c) => [c, 0])) as Record<
    AnomalyClass,
    number
  >;
  const flagged = new Set<string>();
  const flag = (anomaly: Anomaly) => {
    details.push(anomaly);
    byClass[anomaly.class]++;
    flagged.add(`${anomaly.session}:${anomaly.index}`);
  };
  const lostWrites: LostWrite[] = [];
  let checkedReads = 0;
  let reportsWithoutLoss = 0;

  for (const [session, unsorted] of bySession) {
    const ops = [...unsorted].sort((a, b) => a.index - b.index);
    const verdicts = new Map<string, Verdict>();
    /** Whether (and by which operation) the session was told of the loss of `id`. */
    const verdictOf = (id: number): Verdict | undefined => {
      const loss = losses.get(id);
      if (!loss) return undefined;
      const key = loss.failover ? `f${loss.failover.index}` : `w${id}`;
      let verdict = verdicts.get(key);
      if (!verdict) {
        const failover = loss.failover;
        const lostIds = new Set(
          failover ? failover.absent : [id], // rows of this loss the session might be shown
        );
        // Without a failover (a vanished write) the loss dates from the write itself.
        const since = failover?.crashAt ?? ops.find((op) => op.writeId === id)?.end ?? 0;
        verdict = decide(ops, since, failover?.readyAt ?? since, lostIds);
        verdicts.set(key, verdict);
      }
      return verdict;
    };
    /** The session was told of the loss of `id` before operation `index`. */
    const excused = (id: number, index: number): boolean => {
      const verdict = verdictOf(id);
      return verdict?.reportIndex !== undefined && verdict.reportIndex < index;
    };

    const acked: number[] = []; // ids of acknowledged writes, ascending (ids grow with index)
    const seen: number[] = []; // ids shown by earlier reads, ascending
    const seenSet = new Set<number>();
    const touched = new Set<number>(); // ids this session wrote (acked) or saw

    for (const op of ops) {
      if (op.lostReport !== undefined) {
        const lostBefore = [...touched].some((id) => {
          const loss = losses.get(id);
          return loss !== undefined && (loss.failover?.crashAt ?? 0) <= op.end;
        });
        if (!lostBefore) reportsWithoutLoss++;
      }
      if (op.kind === 'write') {
        if (op.ok && op.writeId !== undefined) {
          acked.push(op.writeId);
          touched.add(op.writeId);
        }
        continue;
      }
      if (!op.ok || op.rows === undefined) continue;
      checkedReads++;
      const route = `${op.target ?? '?'}/${op.reason ?? '?'}`;
      const rows = new Set(op.rows);
      // With a full page, only ids at or above the page's smallest id are judged: any visible
      // row newer than that would have been on the page.
      const floor = op.rows.length >= READ_LIMIT ? Math.min(...op.rows) : -Infinity;

      const missed = missing(acked, floor, rows, (id) => excused(id, op.index));
      if (missed.length > 0) {
        flag({
          class: 'missed-own-write',
          session,
          index: op.index,
          at: op.start,
          route,
          detail: `read on ${op.target ?? '?'} (${op.reason ?? '?'}) missed acknowledged write(s) ${quote(missed)}`,
        });
      }
      const backwards = missing(seen, floor, rows, (id) => excused(id, op.index));
      if (backwards.length > 0) {
        flag({
          class: 'read-went-backwards',
          session,
          index: op.index,
          at: op.start,
          route,
          detail: `read on ${op.target ?? '?'} (${op.reason ?? '?'}) no longer shows row(s) ${quote(backwards)} an earlier read showed`,
        });
      }
      const phantoms = op.rows.filter((id) => {
        const failover = losses.get(id)?.failover;
        return failover !== undefined && op.start >= failover.readyAt;
      });
      if (phantoms.length > 0) {
        const failover = losses.get(phantoms[0]!)!.failover!;
        flag({
          class: 'lost-row-served',
          session,
          index: op.index,
          at: op.start,
          route,
          detail: `read on ${op.target ?? '?'} (${op.reason ?? '?'}) showed row(s) ${quote(phantoms)} lost in failover #${failover.index} (${failover.oldPrimary} -> ${failover.promoted})`,
        });
      }
      for (const id of op.rows) {
        touched.add(id);
        if (!seenSet.has(id)) {
          seenSet.add(id);
          insertSorted(seen, id);
        }
      }
    }

    for (const op of ops) {
      if (op.kind !== 'write' || !op.ok || op.writeId === undefined) continue;
      const loss = losses.get(op.writeId);
      if (!loss) continue;
      const verdict = verdictOf(op.writeId)!;
      const reported = verdict.reportIndex !== undefined;
      lostWrites.push({
        session,
        writeId: op.writeId,
        failover: loss.failover?.index,
        reported,
        ...(verdict.howMissed !== undefined ? { howMissed: verdict.howMissed } : {}),
      });
      if (loss.failover === undefined) {
        flag({
          class: 'write-vanished',
          session,
          index: op.index,
          at: op.end,
          detail: `acknowledged write ${op.writeId} is missing from the final primary, and no failover lost it`,
        });
      }
    }
  }

  details.sort((a, b) => a.at - b.at);
  return {
    anomalies: flagged.size,
    byClass,
    details,
    checkedReads,
    lostWritesStaged: lostWrites.length,
    lostWritesReported: lostWrites.filter((w) => w.reported).length,
    lostWrites,
    reportsWithoutLoss,
  };
}

interface Verdict {
  /** Index of the operation that told the session; undefined when nothing did in time. */
  readonly reportIndex?: number;
  /** Otherwise: how the session moved past the loss. */
  readonly howMissed?: string;
}

/**
 * Was the session told of a loss (from `since`, the crash) before it observed a state without
 * it? Its operations from the crash on decide: a loss report (an OtherHistoryError, a write with
 * lostWrite) means told; a successful read that started once the app's new configuration was in
 * service (`readyAt`) means not told: it was served as fresh without the lost rows
 * (`read-served`) or with them from another history (`read-showed-lost-row`). A successful write
 * in between does not decide by itself (the next read may still report the loss), but is noted
 * (`write-first`): a write that merges the lost position away is how reports go missing. A
 * later report is not about this loss any more: the session had moved on (perhaps onto the new
 * history). Operations before `readyAt` ran on the old configuration and do not decide.
 */
function decide(
  ops: readonly Operation[],
  since: number,
  readyAt: number,
  lostIds: ReadonlySet<number>,
): Verdict {
  let wroteFirst = false;
  for (const op of ops) {
    if (op.end < since) continue;
    if (op.lostReport !== undefined) return { reportIndex: op.index };
    if (!op.ok || op.start < readyAt) continue;
    if (op.kind === 'write') {
      wroteFirst = true;
      continue;
    }
    const where = `${op.target ?? '?'}/${op.reason ?? '?'}`;
    const showed = op.rows?.some((id) => lostIds.has(id)) ?? false;
    const how = showed ? `read-showed-lost-row ${where}` : `read-served ${where}`;
    return { howMissed: wroteFirst ? `write-first, then ${how}` : how };
  }
  return { howMissed: wroteFirst ? 'write-first' : 'no-operation' };
}

/**
 * Ids of `expected` (ascending) at or above `floor` that `rows` lacks and that are not excused,
 * newest first; stops after a few, which is enough to flag the read.
 */
function missing(
  expected: readonly number[],
  floor: number,
  rows: ReadonlySet<number>,
  isExcused: (id: number) => boolean,
): number[] {
  const found: number[] = [];
  for (let i = expected.length - 1; i >= 0; i--) {
    const id = expected[i]!;
    if (id < floor) break;
    if (rows.has(id) || isExcused(id)) continue;
    found.push(id);
    if (found.length > QUOTED) break;
  }
  return found;
}

function quote(ids: readonly number[]): string {
  const shown = ids.slice(0, QUOTED).join(', ');
  return ids.length > QUOTED ? `${shown}, ...` : shown;
}

function insertSorted(list: number[], value: number): void {
  let low = 0;
  let high = list.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (list[mid]! < value) low = mid + 1;
    else high = mid;
  }
  list.splice(low, 0, value);
}
