/**
 * The leader lock's atomic steps (cluster.ts). The lock is one key holding `{id, token, since}` as JSON,
 * with a TTL; the fencing token comes from a counter that only ever grows.
 */

/** KEYS: lock, counter. ARGV: replica id, TTL ms, now (ISO). Renews our lock, or takes a free one; returns the holder. */
export const CLAIM = `
local v = redis.call('GET', KEYS[1])
if v then
  local d = cjson.decode(v)
  if d.id == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
  return v
end
local t = redis.call('INCR', KEYS[2])
local n = cjson.encode({id = ARGV[1], token = t, since = ARGV[3]})
redis.call('SET', KEYS[1], n, 'PX', ARGV[2])
return n
`;

/** KEYS: lock. ARGV: replica id, token. 1 when that replica still holds the lock with that token. */
export const FENCE = `
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local d = cjson.decode(v)
if d.id == ARGV[1] and tostring(d.token) == ARGV[2] then return 1 end
return 0
`;

/** KEYS: lock. ARGV: replica id. Gives the lock up if it is still ours. */
export const RESIGN = `
local v = redis.call('GET', KEYS[1])
if v and cjson.decode(v).id == ARGV[1] then redis.call('DEL', KEYS[1]) return 1 end
return 0
`;
