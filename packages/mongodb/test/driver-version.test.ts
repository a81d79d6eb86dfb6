// Names the driver major this run loaded, so a run whose alias is wrong fails instead of testing
// the same driver twice (vitest.config.ts: 7, vitest.driver6.config.ts: 6).
import driverPackage from 'mongodb/package.json' with { type: 'json' };
import { expect, it } from 'vitest';

it('runs against the driver major its config names', () => {
  const major = driverPackage.version.split('.')[0];
  console.log(`[driver] mongodb ${driverPackage.version}`);
  expect(major).toBe(process.env['TIDEMARK_DRIVER_MAJOR']);
});
