export {
  type BadTokenEvent,
  type CarrierEvents,
  type CarrierMetrics,
  type CarrierRequest,
  CarrierScope,
  DEFAULT_TOKEN_COOKIE,
  DEFAULT_TOKEN_HEADER,
  isRejection,
  type Rejection,
  TokenCarrier,
  type TokenCarrierOptions,
} from './carrier.js';
export { type CookieAttributes, readCookie, serializeCookie } from './cookie.js';
export { createForwardingFetch, type ForwardingFetchOptions } from './fetch.js';
export { type LagThreshold, tokenLifetimeSeconds } from './lifetime.js';
export type { TokenStore } from './store.js';
