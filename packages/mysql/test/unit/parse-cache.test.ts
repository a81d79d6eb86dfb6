import { describe, expect, it } from 'vitest';
import { memoizeParse } from '../../src/parse-cache.js';

describe('memoizeParse', () => {
  it('parses each text once while it is remembered, and stays bounded', () => {
    let calls = 0;
    const parse = memoizeParse((text: string) => {
      calls++;
      return { text };
    }, 2);
    const first = parse('a');
    expect(parse('a')).toBe(first);
    expect(calls).toBe(1);
    parse('b');
    parse('c'); // over capacity: forgets everything, then remembers c
    expect(calls).toBe(3);
    parse('a');
    expect(calls).toBe(4);
  });

  it('does not remember failures', () => {
    let calls = 0;
    const parse = memoizeParse((text: string) => {
      calls++;
      if (text === 'bad') throw new TypeError('bad');
      return text;
    });
    expect(() => parse('bad')).toThrow(TypeError);
    expect(() => parse('bad')).toThrow(TypeError);
    expect(calls).toBe(2);
  });
});
