export {
  type BadTokenEvent,
  type CarrierEvents,
  type CarrierMetrics,
  type CarrierRequest,
  CarrierScope,
  DEFAULT_TOKEN_COOKIE,
  DEFAULT_TOKEN_HEADER,
  type HistoryConflictEvent,
  isRejection,
  type Rejection,
  TokenCarrier,
  type TokenCarrierOptions,
  type TokenCarrierSettings,
  type UnknownClusterEvent,
} from './carrier.js';
export { type CookieAttributes, readCookie, serializeCookie } from './cookie.js';
export {
  createForwardingFetch,
  type ForwardingFetchOptions,
  type ForwardingFetchSettings,
} from './fetch.js';
export type { KnownCluster } from './known.js';
export { type LagThreshold, tokenLifetimeSeconds } from './lifetime.js';
export type { TokenStore } from './store.js';
export type { TokenCodecOption } from './token-option.js';
