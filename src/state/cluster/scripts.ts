/**
 * The leader lock's atomic steps (cluster.ts). The lock is one key holding `{id, token, since}` as JSON,
 * with a TTL; the fencing token comes from a counter that only ever grows.
 */

/**
 * KEYS: lock, counter. ARGV: holder id, TTL ms, now (ISO), and optionally more fields of the holder
 * (JSON: an egress command says which one, cluster/command-lock.ts). Renews our lock, or takes a free
 * one; returns the holder.
 */
export const CLAIM = `
local v = redis.call('GET', KEYS[1])
if v then
  local d = cjson.decode(v)
  if d.id == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
  return v
end
local t = redis.call('INCR', KEYS[2])
local d = {id = ARGV[1], token = t, since = ARGV[3]}
if ARGV[4] then
  for k, x in pairs(cjson.decode(ARGV[4])) do
    if d[k] == nil then d[k] = x end
  end
end
local n = cjson.encode(d)
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

/**
 * KEYS: lock, verdicts hash. ARGV: replica id, members (JSON). Writes the health verdicts only while that
 * replica holds the lock (a leader cut off from Redis must not overwrite its successor's), stamped with
 * Redis' clock so followers on skewed hosts agree on their age. Returns 1 when written.
 */
export const PUBLISH_VERDICTS = `
local v = redis.call('GET', KEYS[1])
if not v or cjson.decode(v).id ~= ARGV[1] then return 0 end
local t = redis.call('TIME')
redis.call('HSET', KEYS[2], 'by', ARGV[1], 'at', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), 'members', ARGV[2])
return 1
`;

/** KEYS: verdicts hash. The publisher, when (ms, Redis' clock), the members (JSON), and Redis' now (ms). */
export const READ_VERDICTS = `
local t = redis.call('TIME')
local v = redis.call('HMGET', KEYS[1], 'by', 'at', 'members')
return { v[1] or '', v[2] or '0', v[3] or '', tostring(tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)) }
`;

/**
 * KEYS: lock, scale-request list. ARGV: replica id. The queued scale requests (cluster/scale-queue.ts), in
 * the order they were queued, only while that replica holds the lock: a leader cut off from Redis must not
 * apply what its successor applies. Reads only: a request leaves the list once the leader has recorded it
 * (REMOVE_SCALE_REQUESTS), so a leader killed in between leaves it for the next one.
 */
export const READ_SCALE_REQUESTS = `
local v = redis.call('GET', KEYS[1])
if not v or cjson.decode(v).id ~= ARGV[1] then return {} end
return redis.call('LRANGE', KEYS[2], 0, -1)
`;

/**
 * KEYS: lock, scale-request list. ARGV: replica id, then the requests (JSON strings, as read) the leader
 * recorded. Removes exactly those, only while that replica holds the lock; requests queued meanwhile (at
 * the tail) stay. Each request carries a unique id, so LREM of one entry removes that request and no other.
 * Returns how many were removed.
 */
export const REMOVE_SCALE_REQUESTS = `
local v = redis.call('GET', KEYS[1])
if not v or cjson.decode(v).id ~= ARGV[1] then return 0 end
local n = 0
for i = 2, #ARGV do n = n + redis.call('LREM', KEYS[2], 1, ARGV[i]) end
return n
`;

/**
 * KEYS: lock, timeline sorted set. ARGV: replica id, pools (JSON), span ms. Appends one timeline sample
 * (fleet/store-timeline.ts) only while that replica holds the lock, scored and stamped with Redis' clock
 * (`<ms> <pools>`), so a new leader's samples follow its predecessor's in order whatever the hosts' clocks;
 * drops samples older than the span, and lets the key expire a span after the last sample (a stack gone).
 */
export const APPEND_TIMELINE = `
local v = redis.call('GET', KEYS[1])
if not v or cjson.decode(v).id ~= ARGV[1] then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[2], now, string.format('%d', now) .. ' ' .. ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. string.format('%d', now - tonumber(ARGV[3])))
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 1
`;

/** KEYS: timeline sorted set. ARGV: span ms. The samples within the span (Redis' clock), oldest first. */
export const READ_TIMELINE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. string.format('%d', now - tonumber(ARGV[1])), '+inf')
`;

/**
 * KEYS: lock, a key of the stack. ARGV: holder id, the value. Sets the key only while that holder holds
 * the lock (fenced-writes.ts: the operation journal, the desired counts), so a leader cut off from Redis
 * cannot overwrite its successor's records with stale ones (a stale `queued` would be carried over again,
 * stale counts applied again). Returns 1 when written.
 */
export const WRITE_IF_HOLDER = `
local v = redis.call('GET', KEYS[1])
if not v or cjson.decode(v).id ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[2], ARGV[2])
return 1
`;
