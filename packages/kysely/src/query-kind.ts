import type { CompiledQuery, OperationNode } from 'kysely';

/** Node kinds that change data or schema: never sent to a replica. */
const WRITE_KINDS = new Set([
  'InsertQueryNode',
  'UpdateQueryNode',
  'DeleteQueryNode',
  'MergeQueryNode',
]);
/** Row locks only the primary can take (a replica refuses them in its read-only state). */
const LOCKING = new Set(['ForUpdate', 'ForNoKeyUpdate', 'ForShare', 'ForKeyShare']);

/**
 * Whether a compiled query may run on a replica: a `SelectQueryNode` without row locks and
 * without a data-modifying common table expression (`with x as (insert ...) select ...`). Raw SQL
 * (`sql\`...\`.execute(db)`), DDL and everything else go to the primary: the text of raw SQL is
 * not parsed, so it is treated as a write.
 */
export function isReplicaSafe(query: CompiledQuery): boolean {
  const node = query.query as OperationNode & {
    readonly with?: { readonly expressions: ReadonlyArray<{ readonly expression: OperationNode }> };
    readonly frontModifiers?: ReadonlyArray<{ readonly modifier?: string }>;
    readonly endModifiers?: ReadonlyArray<{ readonly modifier?: string }>;
  };
  if (node.kind !== 'SelectQueryNode') return false;
  const modifiers = [...(node.frontModifiers ?? []), ...(node.endModifiers ?? [])];
  if (modifiers.some((m) => m.modifier !== undefined && LOCKING.has(m.modifier))) return false;
  return !(node.with?.expressions ?? []).some((cte) => containsWrite(cte.expression));
}

/** True when a write node appears anywhere below `node` (bounded by the tree's own size). */
function containsWrite(node: unknown): boolean {
  const stack: unknown[] = [node];
  while (stack.length > 0) {
    const current = stack.pop();
    if (current === null || typeof current !== 'object') continue;
    if (Array.isArray(current)) {
      stack.push(...current);
      continue;
    }
    const kind = (current as { kind?: unknown }).kind;
    if (typeof kind === 'string' && WRITE_KINDS.has(kind)) return true;
    stack.push(...Object.values(current));
  }
  return false;
}
