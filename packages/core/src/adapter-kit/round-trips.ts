/** Operations and round trips counted for one kind of work (reads or writes). */
export interface TripCounter {
  operations: number;
  roundTrips: number;
}

/** What every adapter's `roundTrips()` reports; adapters add their own counters to it. */
export interface RoundTrips {
  /** Writes started. */
  readonly writes: number;
  /** Round trips on write connections. */
  readonly roundTrips: number;
  /** Reads started. */
  readonly reads: number;
  /** Round trips on read connections: the callback's queries and any observation after them. */
  readonly readRoundTrips: number;
}

/** A fresh counter. */
export function tripCounter(): TripCounter {
  return { operations: 0, roundTrips: 0 };
}

/**
 * The read and write counters of one adapter. Leases count into `read` or `write`; `snapshot`
 * is what `roundTrips()` returns.
 */
export class RoundTripCounters {
  readonly write: TripCounter = tripCounter();
  readonly read: TripCounter = tripCounter();

  snapshot(): RoundTrips {
    return {
      writes: this.write.operations,
      roundTrips: this.write.roundTrips,
      reads: this.read.operations,
      readRoundTrips: this.read.roundTrips,
    };
  }
}
