const ENTRY = /^\s*(\d{1,10})-(\d{1,10})-(\d{1,20})\s*$/;

/**
 * Parse `@@gtid_binlog_state` (`0-1-6,0-3-10,1-3-4`: the last GTID of each domain-server pair)
 * into `domain-server` -> sequence. Malformed entries are skipped: the map only ever adds
 * knowledge, and a pair it lacks makes the verdict fall back to the per-domain rules.
 */
export function parseBinlogState(text: string): Map<string, bigint> {
  const last = new Map<string, bigint>();
  for (const entry of text.split(',')) {
    const match = ENTRY.exec(entry);
    if (!match) continue;
    const seq = BigInt(match[3] as string);
    const key = `${Number(match[1])}-${Number(match[2])}`;
    const known = last.get(key);
    last.set(key, known === undefined || seq > known ? seq : known);
  }
  return last;
}

/**
 * Every entry of the state parsed (an empty state is whole): only then does a pair the map lacks
 * mean the server never logged one.
 */
export function isWholeBinlogState(text: string): boolean {
  return text.trim() === '' || text.split(',').every((entry) => ENTRY.test(entry));
}
