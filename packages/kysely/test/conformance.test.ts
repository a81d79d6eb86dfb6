/**
 * The conformance suite through Kysely (read-your-writes at idle and with replay paused,
 * monotonic reads, the fallback cap): every order written and read by Kysely queries on
 * `TidemarkDialect`, with kysely-replication as the control that must miss. Real clusters
 * (TIDEMARK_TARGETS, default pg15 and mysql97); report lines name the target `<target>+kysely`.
 */
import { describeThroughFrontDoor } from '@tidemark/conformance/vitest';
import { kyselyFrontDoor } from './conformance/front-door.js';

describeThroughFrontDoor({
  tool: 'Kysely',
  supported: ['pg15', 'pg18', 'pg19', 'mysql97', 'mariadb1011'],
  defaults: ['pg15', 'mysql97'],
  door: (target) => kyselyFrontDoor(target.startsWith('pg') ? 'pg' : 'mysql'),
});
