/**
 * How a replica's applied position relates to the position a session requires.
 *
 * - `covered`: the replica has applied everything the session needs.
 * - `behind`: same history, not there yet; waiting may help.
 * - `other-history`: the positions come from different replication histories (for example a
 *   write lost in a failover). Waiting never helps and the position must never count as applied.
 */
export type Comparison = 'covered' | 'behind' | 'other-history';

/**
 * The contract every adapter implements for its database's replication positions
 * (PostgreSQL LSN + timeline, MySQL GTID set, MariaDB GTID position, MongoDB cluster time).
 * Core never looks inside a position; it only asks the codec.
 */
export interface PositionCodec<P> {
  /** Short name of the position kind, e.g. `pg`. Used in error messages and metrics. */
  readonly kind: string;
  /**
   * Strictly parse the encoded form. Must throw a {@link TokenError} with code
   * `TIDEMARK_POSITION_INVALID` on any input `encode` could not have produced.
   */
  decode(text: string): P;
  /**
   * Compact encoding. Must use only URL- and cookie-safe characters: `A-Z a-z 0-9 - _ .`
   * (Core checks this when it builds a token.)
   */
  encode(position: P): string;
  /** Does `applied` (a replica's state) satisfy `required` (a session's position)? */
  compare(applied: P, required: P): Comparison;
  /**
   * Least upper bound of two positions: the smallest position covering both. For positions from
   * different histories, return the one the adapter considers authoritative (usually the newer
   * history); the comparison against replicas then surfaces the conflict.
   */
  merge(a: P, b: P): P;
  /**
   * Optional, for positions that are sets (MySQL GTID sets). A position covering `position` that
   * any replica on the primary's history satisfying `position` very likely satisfies too, in
   * fewer bytes: `position` plus what `primary` (a sample of the primary) holds between the
   * position's own transactions. Without it, a session that writes again and again between other
   * sessions' writes collects one fragment per write, and its token grows without bound (until
   * it no longer encodes). Routers call it after a write the primary's history was checked for.
   * Positions that are a single point (LSN, cluster time) do not need it.
   */
  compact?(position: P, primary: P): P;
}

/** Characters allowed in an encoded position; keeps tokens URL-, header- and cookie-safe. */
export const POSITION_TEXT_PATTERN = /^[A-Za-z0-9_.-]+$/;
