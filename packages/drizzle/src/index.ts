export { DrizzleErrorCode, TidemarkDrizzleError } from './errors.js';
export type { TidemarkReplicasOptions } from './replicas.js';
export type { TidemarkRouter } from './routed-client.js';
export { mayRunOnReplica, type SqlFlavour } from './statement-kind.js';
