/**
 * Set algebra on lists of transaction-number intervals, the per-source building block of a MySQL
 * GTID set. Every function takes and returns lists in normal form: sorted by start, and no two
 * intervals overlap or touch (there is a gap of at least one number between them). That normal
 * form is unique for a given set of numbers, which is what makes `equals` a plain comparison and
 * lets every operation run in one linear merge pass.
 *
 * Numbers are bigint: MySQL transaction numbers (GNOs) are signed 64-bit and a server can be
 * given any of them (`SET gtid_next = 'uuid:9000000000000000000'`), so values above 2^53 are
 * legal and would silently lose precision as JavaScript numbers.
 */

/** A closed range `[start, end]` of transaction numbers; `start <= end`. */
export interface GtidInterval {
  readonly start: bigint;
  readonly end: bigint;
}

/** Smallest transaction number MySQL assigns. */
export const MIN_GNO = 1n;
/**
 * Largest transaction number MySQL accepts: 2^63 - 2. The server stores intervals half-open with
 * a signed 64-bit exclusive end (`GNO_END = INT64_MAX`), and its text parser rejects any number
 * at or above `GNO_END` (`parse_gno` in sql/rpl_gtid_set.cc).
 */
export const MAX_GNO = (1n << 63n) - 2n;

/** A frozen interval; callers guarantee `MIN_GNO <= start <= end <= MAX_GNO`. */
export function interval(start: bigint, end: bigint): GtidInterval {
  return Object.freeze({ start, end });
}

/** Sort and coalesce arbitrary valid intervals into normal form. */
export function normalizeIntervals(intervals: readonly GtidInterval[]): GtidInterval[] {
  const sorted = [...intervals].sort((a, b) =>
    a.start < b.start ? -1 : a.start > b.start ? 1 : 0,
  );
  const out: GtidInterval[] = [];
  for (const next of sorted) appendCoalescing(out, next);
  return out;
}

/** Every number in `a` or `b`. */
export function unionIntervals(
  a: readonly GtidInterval[],
  b: readonly GtidInterval[],
): GtidInterval[] {
  const out: GtidInterval[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    const left = a[i];
    const right = b[j];
    if (right === undefined || (left !== undefined && left.start <= right.start)) {
      appendCoalescing(out, left as GtidInterval);
      i++;
    } else {
      appendCoalescing(out, right);
      j++;
    }
  }
  return out;
}

/** Every number in both `a` and `b`. */
export function intersectIntervals(
  a: readonly GtidInterval[],
  b: readonly GtidInterval[],
): GtidInterval[] {
  const out: GtidInterval[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const left = a[i] as GtidInterval;
    const right = b[j] as GtidInterval;
    const start = larger(left.start, right.start);
    const end = smaller(left.end, right.end);
    if (start <= end) out.push(interval(start, end));
    // Drop whichever interval ends first: it cannot overlap anything further on the other side.
    if (left.end < right.end) i++;
    else j++;
  }
  return out;
}

/** Every number in `a` but not in `b`. */
export function subtractIntervals(
  a: readonly GtidInterval[],
  b: readonly GtidInterval[],
): GtidInterval[] {
  const out: GtidInterval[] = [];
  let j = 0;
  for (const piece of a) {
    // Intervals of `b` wholly before this piece are before every later piece too.
    while (j < b.length && (b[j] as GtidInterval).end < piece.start) j++;
    let start = piece.start;
    for (let k = j; k < b.length && start <= piece.end; k++) {
      const hole = b[k] as GtidInterval;
      if (hole.start > piece.end) break;
      if (hole.start > start) out.push(interval(start, hole.start - 1n));
      if (hole.end >= start) start = hole.end + 1n;
    }
    if (start <= piece.end) out.push(interval(start, piece.end));
  }
  return out;
}

/** True when every number of `a` is in `b`. */
export function isSubsetIntervals(a: readonly GtidInterval[], b: readonly GtidInterval[]): boolean {
  let j = 0;
  for (const piece of a) {
    while (j < b.length && (b[j] as GtidInterval).end < piece.start) j++;
    const cover = b[j];
    // In normal form no two intervals of `b` touch, so a piece of `a` is covered only when it
    // lies inside a single interval of `b`.
    if (cover === undefined || cover.start > piece.start || cover.end < piece.end) return false;
  }
  return true;
}

/** True when `a` and `b` share at least one number. */
export function intervalsIntersect(
  a: readonly GtidInterval[],
  b: readonly GtidInterval[],
): boolean {
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const left = a[i] as GtidInterval;
    const right = b[j] as GtidInterval;
    if (left.start <= right.end && right.start <= left.end) return true;
    if (left.end < right.end) i++;
    else j++;
  }
  return false;
}

/** True when both lists hold the same numbers (normal form makes this element-wise). */
export function intervalsEqual(a: readonly GtidInterval[], b: readonly GtidInterval[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const left = a[i] as GtidInterval;
    const right = b[i] as GtidInterval;
    if (left.start !== right.start || left.end !== right.end) return false;
  }
  return true;
}

/** How many transaction numbers the list holds. */
export function countIntervals(a: readonly GtidInterval[]): bigint {
  let total = 0n;
  for (const piece of a) total += piece.end - piece.start + 1n;
  return total;
}

/**
 * Append `next` (which starts at or after the last start in `out`), merging when they touch.
 * Intervals are immutable, so `next` is shared rather than copied.
 */
function appendCoalescing(out: GtidInterval[], next: GtidInterval): void {
  const last = out[out.length - 1];
  if (last !== undefined && next.start <= last.end + 1n) {
    if (next.end > last.end) out[out.length - 1] = interval(last.start, next.end);
    return;
  }
  out.push(next);
}

// Math.max and Math.min do not accept bigints.
function larger(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}

function smaller(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}
