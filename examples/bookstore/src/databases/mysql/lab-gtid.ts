// The lab router's own GTID handling. It is the baseline Tidemark is measured against, so it keeps
// its own small parsers instead of borrowing @tidemark/mysql's (as it keeps its own LSN parser on
// PostgreSQL). Enough for what servers print; not a validator.

/** A MySQL GTID set: per `uuid` (or `uuid:tag`), sorted, merged intervals `[start, end]`. */
export type LabGtidSet = ReadonlyMap<string, ReadonlyArray<readonly [bigint, bigint]>>;

const INTERVAL = /^(\d+)(?:-(\d+))?$/;

/**
 * Parse `@@gtid_executed` text such as `3e11fa47-...:1-5:7,4e11fa47-...:1-3` (tagged sets of
 * MySQL 8.3+, `uuid:tag:1-5`, too). Whitespace and line breaks between elements are ignored.
 */
export function parseLabGtidSet(text: string): LabGtidSet {
  const raw = new Map<string, Array<[bigint, bigint]>>();
  for (const element of text.split(',')) {
    const parts = element.trim().split(':');
    const uuid = parts[0]?.toLowerCase() ?? '';
    if (uuid === '' && parts.length === 1) continue;
    if (!/^[0-9a-f-]{32,36}$/.test(uuid))
      throw new Error(`not a GTID set: ${JSON.stringify(text)}`);
    let key = uuid;
    for (const part of parts.slice(1)) {
      const match = INTERVAL.exec(part);
      if (!match) {
        key = `${uuid}:${part.toLowerCase()}`;
        continue;
      }
      const start = BigInt(match[1]!);
      const end = match[2] === undefined ? start : BigInt(match[2]);
      const intervals = raw.get(key);
      if (intervals) intervals.push([start, end]);
      else raw.set(key, [[start, end]]);
    }
  }
  const set = new Map<string, Array<readonly [bigint, bigint]>>();
  for (const [key, intervals] of raw) set.set(key, mergeIntervals(intervals));
  return set;
}

/** True when every transaction of `required` is in `applied`: what `GTID_SUBSET` answers. */
export function labGtidSubset(required: LabGtidSet, applied: LabGtidSet): boolean {
  for (const [key, intervals] of required) {
    const have = applied.get(key);
    if (!have) return false;
    for (const [start, end] of intervals) {
      if (!have.some(([from, to]) => from <= start && end <= to)) return false;
    }
  }
  return true;
}

function mergeIntervals(intervals: Array<[bigint, bigint]>): Array<readonly [bigint, bigint]> {
  intervals.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const merged: Array<[bigint, bigint]> = [];
  for (const [start, end] of intervals) {
    const last = merged[merged.length - 1];
    if (last && start <= last[1] + 1n) {
      if (end > last[1]) last[1] = end;
    } else merged.push([start, end]);
  }
  return merged;
}

/** A MariaDB GTID position: per replication domain, the sequence number reached. */
export type LabMariadbPosition = ReadonlyMap<number, bigint>;

/** Parse `domain-server-seq` GTIDs joined by commas (`0-1-9,1-2-5`); blank text is empty. */
export function parseLabMariadbPosition(text: string): LabMariadbPosition {
  const position = new Map<number, bigint>();
  for (const element of text.split(',')) {
    const gtid = element.trim();
    if (gtid === '') continue;
    const match = /^(\d+)-(\d+)-(\d+)$/.exec(gtid);
    if (!match) throw new Error(`not a MariaDB GTID position: ${JSON.stringify(text)}`);
    position.set(Number(match[1]), BigInt(match[3]!));
  }
  return position;
}

/** True when `applied` has reached `required` in every domain `required` names. */
export function labMariadbCovers(
  applied: LabMariadbPosition,
  required: LabMariadbPosition,
): boolean {
  for (const [domain, seq] of required) {
    const reached = applied.get(domain);
    if (reached === undefined || reached < seq) return false;
  }
  return true;
}
