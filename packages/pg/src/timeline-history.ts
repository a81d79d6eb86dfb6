import { assertLsn, MAX_LSN, parseLsn } from './lsn.js';

/** Where a timeline branched off: its parent timeline and the first LSN that differs. */
export interface TimelineSwitch {
  readonly parent: number;
  /**
   * LSN at which the parent's history ended for this timeline. WAL of the parent below this point
   * is shared by both timelines; anything the parent wrote at or past it was lost (or never
   * existed) on this timeline. A position `p` of the parent is therefore part of this timeline's
   * history exactly when `p <= switchpoint` (positions are end-of-record pointers).
   */
  readonly switchpoint: bigint;
}

const MAX_TIMELINE = 0xffffffff;
const HISTORY_LINE = /^(\d{1,10})\s+([0-9A-Fa-f]{1,8}\/[0-9A-Fa-f]{1,8})(?:\s.*)?$/;

/**
 * What is known of a cluster's timeline switches, learned from `pg_wal/0000000N.history` files.
 *
 * The codec consults it to decide whether a position on an older timeline is part of a newer
 * timeline's history (covered) or was lost in a failover (other history). It only ever learns:
 * an unknown timeline means "not known to be related", never "related". Contradictory reports
 * for one timeline (two clusters sharing one history object, or a corrupted file) poison that
 * timeline so nothing is ever judged covered through it.
 */
export class TimelineHistory {
  private readonly switches = new Map<number, TimelineSwitch>();
  private readonly poisoned = new Set<number>();

  constructor(switches: Iterable<readonly [number, TimelineSwitch]> = []) {
    for (const [timeline, entry] of switches)
      this.record(timeline, entry.parent, entry.switchpoint);
  }

  /** Number of timelines whose switch point is known. */
  get size(): number {
    return this.switches.size;
  }

  /** The recorded switch of `timeline`, if known and consistent. */
  get(timeline: number): TimelineSwitch | undefined {
    return this.poisoned.has(timeline) ? undefined : this.switches.get(timeline);
  }

  /**
   * True when the ancestry of `timeline` is known (timeline 1 has none). A history file names all
   * ancestors, so one recorded switch implies the rest were recorded from the same file.
   */
  knows(timeline: number): boolean {
    return timeline === 1 || this.get(timeline) !== undefined;
  }

  /** Known switches, ordered by timeline. */
  entries(): Array<[number, TimelineSwitch]> {
    return [...this.switches.entries()]
      .filter(([timeline]) => !this.poisoned.has(timeline))
      .sort(([a], [b]) => a - b);
  }

  /**
   * Record that `timeline` branched off `parent` at `switchpoint`.
   *
   * @throws RangeError when the values cannot describe a PostgreSQL timeline switch.
   */
  record(timeline: number, parent: number, switchpoint: bigint): void {
    if (!isTimeline(timeline) || timeline < 2) {
      throw new RangeError(`Timeline ${timeline} cannot have a parent; timelines start at 1.`);
    }
    if (!isTimeline(parent) || parent >= timeline) {
      throw new RangeError(`Timeline ${timeline} cannot branch off timeline ${parent}.`);
    }
    assertLsn(switchpoint);
    const known = this.switches.get(timeline);
    if (known === undefined) {
      this.switches.set(timeline, { parent, switchpoint });
    } else if (known.parent !== parent || known.switchpoint !== switchpoint) {
      this.poisoned.add(timeline);
    }
  }

  /**
   * Record every switch listed in the history file of `timeline` (the text of
   * `pg_wal/<timeline as 8 hex digits>.history`): one `parentTLI <tab> switchpoint <tab> reason`
   * line per ancestor, oldest first.
   *
   * @throws RangeError when the text is not a history file of that timeline.
   */
  recordHistoryFile(timeline: number, text: string): void {
    const lines = parseHistoryFile(timeline, text);
    for (const line of lines) this.record(line.timeline, line.parent, line.switchpoint);
  }

  /**
   * Highest LSN up to which the WAL of `ancestor` is part of `descendant`'s history, or undefined
   * when `ancestor` is not known to be an ancestor (unknown switch, sibling timeline, newer).
   */
  sharedLimit(descendant: number, ancestor: number): bigint | undefined {
    if (descendant === ancestor) return MAX_LSN;
    let limit = MAX_LSN;
    let timeline = descendant;
    while (timeline > ancestor) {
      const entry = this.get(timeline);
      if (entry === undefined) return undefined;
      if (entry.switchpoint < limit) limit = entry.switchpoint;
      timeline = entry.parent;
    }
    return timeline === ancestor ? limit : undefined;
  }
}

/** One switch listed in a history file. */
export interface HistoryLine {
  readonly timeline: number;
  readonly parent: number;
  readonly switchpoint: bigint;
}

/**
 * Parse a PostgreSQL timeline history file. Line i names the parent timeline and where it ended;
 * the child is the parent named on line i+1, or `timeline` itself for the last line.
 *
 * @throws RangeError on malformed content.
 */
export function parseHistoryFile(timeline: number, text: string): HistoryLine[] {
  if (!isTimeline(timeline) || timeline < 2) {
    throw new RangeError(`Timeline ${timeline} has no history file.`);
  }
  const entries: Array<{ parent: number; switchpoint: bigint }> = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const match = HISTORY_LINE.exec(line);
    const parent = match ? Number(match[1]) : 0;
    if (!match || !isTimeline(parent)) {
      throw new RangeError(`Malformed line in history file of timeline ${timeline}.`);
    }
    entries.push({ parent, switchpoint: parseLsn(match[2] as string) });
  }
  if (entries.length === 0) {
    throw new RangeError(`History file of timeline ${timeline} lists no switch.`);
  }
  return entries.map((entry, index) => {
    const child = entries[index + 1]?.parent ?? timeline;
    if (!(entry.parent < child)) {
      throw new RangeError(`History file of timeline ${timeline} is not in timeline order.`);
    }
    return { timeline: child, parent: entry.parent, switchpoint: entry.switchpoint };
  });
}

export function isTimeline(value: number): boolean {
  return Number.isInteger(value) && value >= 1 && value <= MAX_TIMELINE;
}
