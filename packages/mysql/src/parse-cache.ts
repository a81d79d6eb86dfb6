/**
 * Remember the last few parses of server text. A node's applied position is read on every probe
 * (every 200 ms by default) and after every read, and between two writes it prints the same text;
 * a MySQL gtid_executed that has collected many server UUIDs over the years of failovers takes
 * milliseconds to parse (see README), a map lookup microseconds. The codecs' token decoders use
 * it too: many users' tokens carry the same settled position (one probe settles many reads).
 */
export function memoizeParse<T>(parse: (text: string) => T, capacity = 32): (text: string) => T {
  const cache = new Map<string, T>();
  return (text) => {
    const hit = cache.get(text);
    if (hit !== undefined) return hit;
    const value = parse(text);
    // Crude but bounded: positions only move forward, so old texts are not asked for again.
    if (cache.size >= capacity) cache.clear();
    cache.set(text, value);
    return value;
  };
}
