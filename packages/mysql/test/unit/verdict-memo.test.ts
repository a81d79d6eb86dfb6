import type { PrimaryVerdict } from '@tidemark/core/adapter';
import { describe, expect, it } from 'vitest';
import type { PrimaryIdentity } from '../../src/flavour.js';
import { VerdictMemo } from '../../src/verdict-memo.js';

describe('VerdictMemo', () => {
  const identity = (serverId: number): PrimaryIdentity => ({ serverId, stillApplying: false });

  it('judges once while the primary, its identity and the position are the same objects', () => {
    const memo = new VerdictMemo<{ at: number }>();
    const primary = { at: 5 };
    const required = { at: 3 };
    const who = identity(1);
    let calls = 0;
    const classify = (verdict: PrimaryVerdict) => () => {
      calls++;
      return verdict;
    };
    expect(memo.judge(primary, required, who, classify('ok'))).toBe('ok');
    expect(memo.judge(primary, required, who, classify('other-history'))).toBe('ok');
    expect(calls).toBe(1);
    // A new primary sample, even with the same content, is judged again.
    expect(memo.judge({ at: 5 }, required, who, classify('other-history'))).toBe('other-history');
    // A failover can keep the position text and change the server: judged again.
    expect(memo.judge(primary, required, identity(2), classify('impossible'))).toBe('impossible');
    // Another position is judged on its own.
    expect(memo.judge(primary, { at: 3 }, who, classify('ok'))).toBe('ok');
    expect(calls).toBe(4);
  });

  it('remembers no failure: the next call asks again', () => {
    const memo = new VerdictMemo<{ at: number }>();
    const primary = { at: 1 };
    const required = { at: 1 };
    expect(() =>
      memo.judge(primary, required, undefined, () => {
        throw new Error('the primary was never probed');
      }),
    ).toThrow('never probed');
    expect(memo.judge(primary, required, undefined, () => 'ok')).toBe('ok');
  });
});
