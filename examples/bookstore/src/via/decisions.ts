import { type Router, runWithSession, type Session } from '@tidemark/core';
import type { FrontDoor } from '../strategies/tidemark.js';

/**
 * A front door whose queries find their session in the request scope (`runWithSession`, as the
 * `@tidemark/http` middleware sets it), and whose reads are located by the router's `decision`
 * event: the workload is sequential, so the last decision belongs to the read in progress.
 */
export function lastDecisionTarget<P, C, H>(
  router: Router<P, C>,
  handle: H,
): Pick<FrontDoor<H>, 'write' | 'read'> {
  let target: string | undefined;
  router.events.on('decision', (decision) => {
    target = decision.target;
  });
  return {
    write: (session: Session, fn) => runWithSession(session, () => fn(handle)),
    async read(session, fn) {
      target = undefined;
      const value = await runWithSession(session, () => fn(handle));
      if (target === undefined) throw new Error('the read made no routing decision');
      return { value, target };
    },
  };
}
