import { describe, expect, it } from 'vitest';
import { classifyMariadbAgainstPrimary, MariadbGtidPosition } from '../../src/index.js';

const pos = (text: string) => MariadbGtidPosition.parse(text);
/** The current primary has server id 2 and took over domain 0 from server 1 at seq 100. */
const PRIMARY_ID = 2;

describe('classifyMariadbAgainstPrimary', () => {
  it.each([
    ['covered, same writer', '0-1-100', '0-1-90', 'ok'],
    ['covered by a later seq of the new primary', '0-2-105', '0-1-100', 'ok'],
    ['a lost write of the old primary', '0-1-100', '0-1-101', 'other-history'],
    [
      'a domain the primary never saw, written elsewhere',
      '0-1-100',
      '0-1-50,1-7-3',
      'other-history',
    ],
    [
      'same seq from another server (strict mode: two histories)',
      '0-2-101',
      '0-1-101',
      'other-history',
    ],
    ["the primary's own id beyond its position", '0-2-105', '0-2-106', 'impossible'],
    ["the primary's own id in a domain it never wrote", '0-2-105', '5-2-1', 'impossible'],
    ['other-history wins over impossible', '0-1-100', '0-1-101,1-2-1', 'other-history'],
    [
      'a replica that kept a lost write and is ahead of the primary sample in another domain',
      '0-1-100,1-2-10',
      '0-1-101,1-2-12',
      'other-history',
    ],
  ])('%s', (_name, primary, required, verdict) => {
    expect(classifyMariadbAgainstPrimary(pos(primary), pos(required), PRIMARY_ID)).toBe(verdict);
  });

  it('without strict mode, an equal seq from another server counts as covered', () => {
    expect(
      classifyMariadbAgainstPrimary(pos('0-2-101'), pos('0-1-101'), PRIMARY_ID, {
        strictMode: false,
      }),
    ).toBe('ok');
  });
});
