import pg from 'pg';

/**
 * What node-postgres exposes once it can pipeline (8.23+, the documented `pipeline` client
 * option): the flag, read each time the client sends, and the queue of queries already on the
 * wire, answered in order.
 */
interface PipeliningClient {
  pipeline: boolean;
  readonly _sentQueryQueue: readonly unknown[];
}

function canPipeline(client: pg.PoolClient): client is pg.PoolClient & PipeliningClient {
  const candidate = client as unknown as Partial<PipeliningClient>;
  return typeof candidate.pipeline === 'boolean' && Array.isArray(candidate._sentQueryQueue);
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
 * For `transaction: false` writes: a position query written right behind each statement of the
 * callback, without waiting for the statement's answer (pipelining), so the capture after the
 * last one arrives in the same round trip as that statement's own answer. In autocommit mode the
 * server commits a statement before it runs the next one, so the capture behind the last
 * statement is at least that commit's position (invariant 1); when it reports an open
 * transaction, the adapter refuses the write as before.
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
    captureSql: string,
  ) {
    this.counted = client.query;
    const send = Object.getPrototypeOf(client).query as pg.PoolClient['query'];
    client.query = ((...args: unknown[]) => {
      if (keepsPortalOpen(args[0])) this.stop();
      const result = (this.counted as (...a: unknown[]) => unknown).apply(client, args);
      if (!this.off) {
        client.pipeline = true;
        // Not counted as a round trip: it travels behind the statement and is answered with it.
        const capture = (send as (text: string) => Promise<pg.QueryResult>).call(
          client,
          captureSql,
        );
        this.last = capture.then(
          (answer) => answer.rows[0] as Record<string, unknown> | undefined,
          () => undefined,
        );
      }
      return result;
    }) as pg.PoolClient['query'];
  }

  /** Install on a client checked out for one write; undefined when the driver cannot pipeline. */
  static install(client: pg.PoolClient, captureSql: string): PipelinedCapture | undefined {
    return canPipeline(client) ? new PipelinedCapture(client, captureSql) : undefined;
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
