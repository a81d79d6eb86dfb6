// MariaDB GTID positions ("domain-server-seq" per replication domain, comma-separated), just
// enough for the harness to ask "has this node got at least that far?". Not the adapter's codec.

/** Highest sequence number per replication domain in a position such as `0-1-9,1-2-4`. */
export function parseMariadbPosition(text: string): Map<number, bigint> {
  const byDomain = new Map<number, bigint>();
  for (const part of text.split(',')) {
    const gtid = part.trim();
    if (gtid === '') continue;
    const m = /^(\d+)-(\d+)-(\d+)$/.exec(gtid);
    if (!m) throw new Error(`not a MariaDB GTID position: ${JSON.stringify(text)}`);
    const domain = Number(m[1]);
    const seq = BigInt(m[3]!);
    const known = byDomain.get(domain);
    if (known === undefined || seq > known) byDomain.set(domain, seq);
  }
  return byDomain;
}

/**
 * The GTIDs of `need` that the positions in `have` together do not reach (empty when they reach
 * it in every domain). Under gtid_strict_mode sequence numbers only grow within a domain, so
 * comparing them is enough.
 */
export function mariadbBeyond(have: readonly string[], need: string): string[] {
  const reached = new Map<number, bigint>();
  for (const text of have) {
    for (const [domain, seq] of parseMariadbPosition(text)) {
      const known = reached.get(domain);
      if (known === undefined || seq > known) reached.set(domain, seq);
    }
  }
  return need
    .split(',')
    .map((gtid) => gtid.trim())
    .filter((gtid) => {
      if (gtid === '') return false;
      const [domain, seq] = [...parseMariadbPosition(gtid)][0]!;
      return (reached.get(domain) ?? -1n) < seq;
    });
}

/** True when the positions in `have` together reach `need` in every domain of `need`. */
export function mariadbCovers(have: readonly string[], need: string): boolean {
  return mariadbBeyond(have, need).length === 0;
}
