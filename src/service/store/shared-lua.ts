/**
 * The Lua side of shared (gateway) leases (the memory store's is src/service/leases/shared.ts), part of
 * every script's prelude (prelude.ts), so a member's load is read and changed in the same atomic step
 * as the grant or the end of a lease.
 *
 * Keys under the prefix:
 * - `shared` hash: member → shared leases it carries (absent = none); a member with any is out of
 *   `ready:<pool>`, so an exclusive acquire never picks it, and is never in `leased`;
 * - `sl:<member>` set: the ids of those leases (for revoke and removal);
 * - `slu` hash: member → when its last lease ended (its LRU score), kept while it carries shared leases;
 * - `part:<pool>` zset: members carrying shared leases with room for another, scored load·LOAD_STEP +
 *   last use, so the first entry is the least loaded, then least recently used (then by name).
 */
export const SHARED_LUA = `
local LOAD_STEP = 1e13 -- above any epoch-ms time until the year 2286: load sorts first, last use second
local function sharedcount(m) return tonumber(redis.call('HGET', P .. 'shared', m) or '0') end
-- Whether member m has room: exclusive acquires need it free of everything, shared ones free of an
-- exclusive lease and below the pool's memberConcurrency.
local function hasroom(p, m, shared)
  if redis.call('HEXISTS', P .. 'leased', m) == 1 then return false end
  local c = sharedcount(m)
  if not shared then return c == 0 end
  local cfg = poolcfg(p)
  return cfg ~= nil and c < cfg.mc
end
-- Puts m in or out of part:<p> by its load (c shared leases, last used lu).
local function sharedplace(p, m, c, lu)
  local cfg = poolcfg(p)
  if c > 0 and cfg and c < cfg.mc then redis.call('ZADD', P .. 'part:' .. p, c * LOAD_STEP + lu, m)
  else redis.call('ZREM', P .. 'part:' .. p, m) end
end
-- A shared lease id granted on m (taken out of ready:<p> with its first one). Returns its LRU score.
local function sharedgranted(p, m, id)
  local c = redis.call('HINCRBY', P .. 'shared', m, '1')
  local lu
  if c == 1 then
    lu = tonumber(redis.call('ZSCORE', P .. 'ready:' .. p, m) or '0')
    redis.call('ZREM', P .. 'ready:' .. p, m)
    redis.call('HSET', P .. 'slu', m, lu)
  else
    lu = tonumber(redis.call('HGET', P .. 'slu', m) or '0')
  end
  redis.call('SADD', P .. 'sl:' .. m, id)
  sharedplace(p, m, c, lu)
  return lu
end
-- A shared lease id on m ended at 'at' (nil: taken away, the LRU score stays). Returns how many m still
-- carries and its LRU score (the caller puts a member left with none back in ready:<p>).
local function sharedended(p, m, id, at)
  redis.call('SREM', P .. 'sl:' .. m, id)
  local c = redis.call('HINCRBY', P .. 'shared', m, '-1')
  local lu = at or tonumber(redis.call('HGET', P .. 'slu', m) or '0')
  if c <= 0 then
    redis.call('HDEL', P .. 'shared', m)
    redis.call('HDEL', P .. 'slu', m)
    redis.call('ZREM', P .. 'part:' .. p, m)
    return 0, lu
  end
  redis.call('HSET', P .. 'slu', m, lu)
  if redis.call('HEXISTS', P .. 'mem:' .. p, m) == 1 then sharedplace(p, m, c, lu) else redis.call('ZREM', P .. 'part:' .. p, m) end
  return c, lu
end
-- The ids of every lease on m, exclusive first (revoke, removal).
local function leasesof(m)
  local ids = redis.call('SMEMBERS', P .. 'sl:' .. m)
  local id = redis.call('HGET', P .. 'leased', m)
  if id then table.insert(ids, 1, id) end
  return ids
end
-- The least-loaded member of part:<p> that ok(m) accepts: member, score (or nil).
local function pickloaded(p, ok)
  local cfg = poolcfg(p)
  if not cfg then return nil end
  local all = redis.call('ZRANGE', P .. 'part:' .. p, 0, -1, 'WITHSCORES')
  for i = 1, #all, 2 do
    local m = all[i]
    if sharedcount(m) < cfg.mc and ok(m) then return m, tonumber(all[i + 1]) end
  end
  return nil
end
`;
