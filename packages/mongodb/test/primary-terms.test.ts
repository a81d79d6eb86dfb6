import { BSON } from 'mongodb';
import { describe, expect, it } from 'vitest';
import { primaryTermOf } from '../src/primary-terms.js';

const electionId = (term: number) =>
  new BSON.ObjectId(`7fffffff${term.toString(16).padStart(16, '0')}`);

describe('primaryTermOf (a heartbeat reply)', () => {
  it("reads a writable primary's term from its election id", () => {
    expect(primaryTermOf({ isWritablePrimary: true, electionId: electionId(7) })).toBe(7);
    expect(primaryTermOf({ ismaster: true, electionId: electionId(0x1_0000_0001) })).toBe(
      0x1_0000_0001,
    );
  });

  it("takes the newer of the election id and the primary's last write", () => {
    const lastWrite = {
      opTime: { ts: new BSON.Timestamp({ t: 1, i: 1 }), t: BSON.Long.fromNumber(9) },
    };
    expect(primaryTermOf({ isWritablePrimary: true, electionId: electionId(8), lastWrite })).toBe(
      9,
    );
    expect(primaryTermOf({ isWritablePrimary: true, lastWrite })).toBe(9);
  });

  it('names no term for a secondary, or for a primary that announced none', () => {
    const lastWrite = { opTime: { t: 3 } };
    expect(primaryTermOf({ isWritablePrimary: false, secondary: true, lastWrite })).toBeUndefined();
    expect(primaryTermOf({ isWritablePrimary: true })).toBeUndefined();
    // Not a protocol-version-1 election id: not a term.
    expect(
      primaryTermOf({
        isWritablePrimary: true,
        electionId: new BSON.ObjectId('65f0a1b2c3d4e5f601234567'),
      }),
    ).toBeUndefined();
  });
});
