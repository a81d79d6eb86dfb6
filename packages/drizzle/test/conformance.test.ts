/**
 * The conformance suite through Drizzle (read-your-writes at idle and with replay paused,
 * monotonic reads, the fallback cap): every order written and read by Drizzle queries on
 * Tidemark's `withReplicas`, with Drizzle's own `withReplicas` as the control that must miss.
 * Real clusters (TIDEMARK_TARGETS, default pg15, mysql97 and mariadb1011); report lines name the
 * target `<target>+drizzle`.
 */
import { describeThroughFrontDoor } from '@tidemark/conformance/vitest';
import { drizzleFrontDoor } from './conformance/front-door.js';

describeThroughFrontDoor({
  tool: 'Drizzle',
  supported: ['pg15', 'pg18', 'pg19', 'mysql97', 'mariadb1011'],
  defaults: ['pg15', 'mysql97', 'mariadb1011'],
  door: (target) => drizzleFrontDoor(target.startsWith('pg') ? 'pg' : 'mysql'),
});
