// The simulator does not depend on `mongodb` itself: the test hands in the driver's own `BSON`
// export, so the bytes on the wire are encoded by exactly the library under test.

/** A BSON Timestamp as the driver's `bson` package models it. */
export interface BsonTimestamp {
  readonly t: number;
  readonly i: number;
}

/** The parts of the driver's `BSON` export (`import { BSON } from 'mongodb'`) the simulator uses. */
export interface SimulatorBson {
  serialize(document: Record<string, unknown>): Uint8Array;
  deserialize(bytes: Uint8Array, options?: Record<string, unknown>): Record<string, unknown>;
  Timestamp: new (value: { t: number; i: number }) => BsonTimestamp;
  Long: { fromNumber(value: number): unknown };
  Binary: new (bytes: Uint8Array, subType?: number) => unknown;
  ObjectId: new (hex: string) => unknown;
}

/** Order of two optimes' timestamps: negative, zero or positive like a sort comparator. */
export function compareTimestamps(a: BsonTimestamp, b: BsonTimestamp): number {
  return a.t === b.t ? a.i - b.i : a.t - b.t;
}
