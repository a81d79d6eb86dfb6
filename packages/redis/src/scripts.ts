/**
 * Compare-and-set: replace the value only if it is still the one the merge started from
 * (ARGV[1]; the empty string means "no entry"). Optimistic concurrency that, unlike WATCH/MULTI,
 * is safe on a shared connection: WATCH state belongs to the connection, so two raises
 * multiplexed on one ioredis client would watch for each other and an update could be lost.
 */
export const COMPARE_AND_SET = `
local current = redis.call('GET', KEYS[1])
if (current == false and ARGV[1] == '') or current == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'EX', tonumber(ARGV[3]))
  return 1
end
return 0
`;

/** Compare-and-delete: drop the entry only if nobody raised it since it was checked. */
export const COMPARE_AND_DELETE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`;
