/**
 * The conformance suite through Prisma (read-your-writes at idle and with replay paused,
 * monotonic reads, the fallback cap): every order written and read by Prisma model queries on
 * `PrismaTidemark` + `readReplicas({ router })`, with `@prisma/extension-read-replicas` as the
 * control that must miss. Real clusters (TIDEMARK_TARGETS, default pg15 and mysql97); report
 * lines name the target `<target>+prisma`.
 */
import { describeThroughFrontDoor } from '@tidemark/conformance/vitest';
import { prismaFrontDoor } from './conformance/front-door.js';

describeThroughFrontDoor({
  tool: 'Prisma',
  supported: ['pg15', 'pg18', 'pg19', 'mysql97', 'mariadb1011'],
  defaults: ['pg15', 'mysql97'],
  door: (target) => prismaFrontDoor(target),
});
