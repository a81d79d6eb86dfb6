import pg from 'pg';

/**
 * What node-postgres exposes once it can pipeline (8.23+, the documented `pipeline` client
 * option): the flag, read each time the client sends, and the queue of queries already on the
 * wire, answered in order.
 */
interface PipeliningClient {
  pipeline: boolean;
  readonly _sentQueryQueue: readonly unknown[];
  /** Its socket, corked so that a statement and the query behind it leave in one write. */
  readonly connection?: { readonly stream?: { cork?: () => void; uncork?: () => void } };
}

function canPipeline(client: pg.PoolClient): client is pg.PoolClient & PipeliningClient {
  const candidate = client as unknown as Partial<PipeliningClient>;
  return typeof candidate.pipeline === 'boolean' && Array.isArray(candidate._sentQueryQueue);
}

/** Whether the installed node-postgres can pipeline (8.23+), asked of a client never connected. */
export function driverCanPipeline(): boolean {
  return canPipeline(new pg.Client() as unknown as pg.PoolClient);
}

/**
 * Queries that keep a portal open across round trips (pg-cursor, pg-query-stream, the `rows`
 * option): node-postgres refuses them on a pipelining client, so none is ever sent behind them.
 */
function keepsPortalOpen(config: unknown): boolean {
  if (typeof config !== 'object' || config === null) return false;
  const shaped = config as { submit?: unknown; rows?: unknown };
  if (typeof shaped.submit === 'function' && !(config instanceof pg.Query)) return true;
  return shaped.rows !== undefined && shaped.rows !== null;
}

/**
 * A position query written right behind each statement of a callback, in the same socket write,
 * without waiting for the statement's answer (pipelining), so the one after the last statement
 * arrives in the same round trip as that statement's own answer. For `transaction: false` writes
 * (`pipelineCapture`): in autocommit mode the server commits a statement before it runs the next
 * one, so the capture behind the last statement is at least that commit's position (invariant
 * 1); when it reports an open transaction, the adapter refuses the write as before. For replica
 * reads asked to observe: replay only moves forward, so the observation behind the last statement
 * covers everything the callback saw (invariant 3).
 *
 * The client pipelines only while this is installed, and only plain queries: a query that keeps
 * a portal open turns it off for the rest of the lease (when nothing is in flight; otherwise
 * node-postgres refuses that query with its own error), and the adapter then captures after the
 * callback as it did before pipelining existed. Older node-postgres versions never install it.
 */
export class PipelinedCapture {
  /** The capture sent last: answered after everything sent before it. */
  private last: Promise<Record<string, unknown> | undefined> | undefined;
  private off = false;
  private readonly counted: pg.PoolClient['query'];

  private constructor(
    private readonly client: pg.PoolClient & PipeliningClient,
    capture: string | pg.QueryConfig,
  ) {
    this.counted = client.query;
    const send = Object.getPrototypeOf(client).query as pg.PoolClient['query'];
    client.query = ((...args: unknown[]) => {
      if (keepsPortalOpen(args[0])) this.stop();
      if (this.off) return (this.counted as (...a: unknown[]) => unknown).apply(client, args);
      client.pipeline = true;
      // One socket write for both: node-postgres writes a query as it submits it (at once, in
      // pipeline mode), and each write is a system call.
      const stream = client.connection?.stream;
      stream?.cork?.();
      try {
        const result = (this.counted as (...a: unknown[]) => unknown).apply(client, args);
        // Not counted as a round trip: it travels behind the statement and is answered with it.
        const answer = (send as (query: string | pg.QueryConfig) => Promise<pg.QueryResult>).call(
          client,
          capture,
        );
        this.last = answer.then(
          (reply) => reply.rows[0] as Record<string, unknown> | undefined,
          () => undefined,
        );
        return result;
      } finally {
        stream?.uncork?.();
      }
    }) as pg.PoolClient['query'];
  }

  /**
   * Install on a client checked out for one operation; undefined when the driver cannot
   * pipeline. `capture`: the query sent behind each statement (text, or a named statement).
   */
  static install(
    client: pg.PoolClient,
    capture: string | pg.QueryConfig,
  ): PipelinedCapture | undefined {
    return canPipeline(client) ? new PipelinedCapture(client, capture) : undefined;
  }

  /**
   * Run `fn` on the client with this installed, then {@link finish} (also when `fn` throws): its
   * value and the row of the query behind its last statement.
   */
  async around<T>(
    fn: () => Promise<T>,
  ): Promise<{ readonly value: T; readonly row: Record<string, unknown> | undefined }> {
    let value: T;
    try {
      value = await fn();
    } catch (error) {
      await this.finish();
      throw error;
    }
    return { value, row: await this.finish() };
  }

  /**
   * The row of the capture behind the callback's last statement, once answered; undefined when
   * there was none (no statement, a portal query, a failed capture). Then uninstalls.
   */
  async finish(): Promise<Record<string, unknown> | undefined> {
    // Once the last capture is answered, nothing pipelined is left on the wire, and the client
    // can leave pipelining (a query still in its sent queue would never be answered otherwise).
    const row = await this.last;
    this.uninstall();
    return this.off ? undefined : row;
  }

  private stop(): void {
    this.off = true;
    if (this.client._sentQueryQueue.length === 0) this.client.pipeline = false;
  }

  private uninstall(): void {
    this.client.query = this.counted;
    this.client.pipeline = false;
  }
}
