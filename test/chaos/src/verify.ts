// Direct queries the campaign uses to establish facts independently of any router: which rows
// really exist on a node.
import type { Cluster } from '@tidemark/test-clusters';

/** Ids per query: keeps statements small on every server. */
const CHUNK = 500;

/**
 * Which of `ids` exist in the workload's `orders` table on `node` (the conformance workload's
 * table, the same on PostgreSQL, MySQL and MariaDB). Throws when the node does not answer.
 */
export async function presentIds(
  cluster: Cluster,
  node: string,
  ids: readonly number[],
): Promise<Set<number>> {
  const present = new Set<number>();
  for (let i = 0; i < ids.length; i += CHUNK) {
    const chunk = ids.slice(i, i + CHUNK);
    for (const id of chunk) {
      if (!Number.isSafeInteger(id)) throw new Error(`not an integer id: ${id}`);
    }
    const rows = (await cluster.exec(
      node,
      `SELECT id FROM orders WHERE id IN (${chunk.join(', ')})`,
    )) as Array<{ id: unknown }>;
    for (const row of rows) present.add(Number(row.id));
  }
  return present;
}

/** The ids of `ids` missing from `node`. */
export async function absentIds(
  cluster: Cluster,
  node: string,
  ids: readonly number[],
): Promise<number[]> {
  const present = await presentIds(cluster, node, ids);
  return ids.filter((id) => !present.has(id));
}
