export { mayRunOnReplica, type SqlFlavour } from '@tidemark/core';
export { DrizzleErrorCode, TidemarkDrizzleError } from './errors.js';
export type { TidemarkReplicasOptions } from './replicas.js';
export type { TidemarkRouter } from './routed-client.js';
