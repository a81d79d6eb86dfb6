// Real MongoDB replica sets for the test harness (target `mongo`), one entry point per provider.
// The MongoDB simulator (../mongo-sim) is a different thing: it fakes a server for driver tests.
//
// UNTESTED HERE: no mongod on the machines this was written on. See README.md of the package
// ("Real MongoDB (target `mongo`)") for how to run these where MongoDB exists.

export {
  type AdminRunner,
  APPLY_FAIL_POINT,
  type Hello,
  pauseApplier,
  resumeApplier,
  runAdmin,
} from './admin.js';
export * from './commands.js';
/** testcontainers provider: three `mongo:8.0` containers (image override TIDEMARK_TC_IMAGE_MONGO). */
export { containerMongo, containerScripts, imageFromEnv } from './containers.js';
/** external provider: a replica set someone else runs, at TIDEMARK_MONGO_URI. */
export { externalMongo, uriFromEnv } from './external.js';
/** local provider: 3 mongod processes from the binary named in TIDEMARK_MONGOD. */
export { localMongo, memberCount, RUN_DIR_PREFIX } from './local.js';
export { type Member, type MemberProcess, MongoReplicaSet, makeMember } from './replica-set.js';
