/**
 * What every lease-store script starts with (scripts.ts, publish-scripts.ts): the prefix, the settings,
 * Redis' clock, the pool, target-cooldown, politeness and shared-lease helpers, ending a lease, and the lazy expiry.
 */
import { POLITE_LUA } from "./politeness-lua";
import { SHARED_LUA } from "./shared-lua";

export const PRELUDE = `
local P = KEYS[1]
local S = __SETTINGS__
local A = 1
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- The same instant as a string from TIME's digits (seconds, then the first 3 of 6 microsecond digits),
-- for arguments: Redis formats each number argument with %.17g, which costs more than the call's own work.
local NOW = t[1] .. string.sub(string.rep('0', 6 - #t[2]) .. t[2], 1, 3)
-- Test only (RedisStoreOptions.testClock): the epoch ms a test wrote, as the memory manager's injected
-- clock, so one model can drive both stores through hours of leases in a second.
if S.clk == 1 then NOW = redis.call('GET', P .. 'clock'); now = tonumber(NOW) end

-- Pool settings, read from Redis once per run (an acquire asks for each pool's several times) and kept
-- in pcache (false: no such pool). PUBLISH, their only writer, calls poolchanged after each change.
local pcache = {}
local function parsepool(c)
  -- cooldown ms : session ttl ms : memberConcurrency (absent in what older replicas published: 1)
  local cd, st, mc = string.match(c, '^(%d+):(%d+):?(%d*)$')
  return { cd = tonumber(cd), st = tonumber(st), mc = tonumber(mc) or 1 }
end
local function poolcfg(p)
  local c = pcache[p]
  if c == nil then
    local raw = redis.call('HGET', P .. 'pools', p)
    c = raw and parsepool(raw) or false
    pcache[p] = c
  end
  return c or nil
end
-- Every pool's name, in HKEYS' order (HGETALL walks the hash the same way), their settings cached on the way.
local function allpools()
  local kv = redis.call('HGETALL', P .. 'pools')
  local names = {}
  for i = 1, #kv, 2 do
    names[#names + 1] = kv[i]
    pcache[kv[i]] = parsepool(kv[i + 1])
  end
  return names
end
${POLITE_LUA}
-- PUBLISH changed pool p's settings or rules: the next read goes to Redis again.
local function poolchanged(p) pcache[p] = nil; rcache[p] = nil end
${SHARED_LUA}
-- Target cooldowns: "until:blocks" per member in a hash per target (target-cooldowns.ts' rules).
local function tcget(target, m)
  local v = redis.call('HGET', P .. 'tc:' .. target, m)
  if not v then return 0, 0 end
  local u, b = string.match(v, '^(%d+):(%d+)$')
  return tonumber(u), tonumber(b)
end
local function tcrecord(target, m, outcome, at, restok)
  local u, b = tcget(target, m)
  if outcome == 'blocked' then
    b = b + 1
    u = at + math.min(S.bmax, S.bbase * 2 ^ (b - 1))
  else
    if outcome ~= 'error' then b = 0 end
    u = math.max(u, at + (restok or S.tcd))
  end
  local k = P .. 'tc:' .. target
  if u <= now and b == 0 then redis.call('HDEL', k, m) else redis.call('HSET', k, m, string.format('%d:%d', u, b)) end
  -- The hash lives as long as its longest-kept entry (a block count is kept bmax past its rest).
  local keep = u - now + (b > 0 and S.bmax or 0)
  if keep > 0 and redis.call('PTTL', k) < keep then redis.call('PEXPIRE', k, keep) end
  return u
end

-- Ends lease id (cause released | ttl | member-removed). Returns the member and pool it was on.
-- l: the lease's fields as read here, when the caller read them already (RELEASE: the same ones first).
local function endlease(id, cause, outcome, removal, l)
  local k = P .. 'lease:' .. id
  l = l or redis.call('HMGET', k, 'proxy', 'pool', 'target', 'skey', 'expiresAt', 'prev', 'rule', 'shared')
  local m, p, target, skey = l[1], l[2], l[3], l[4]
  if not m then return nil end
  local at = cause == 'ttl' and tonumber(l[5]) or now
  redis.call('DEL', k)
  redis.call('ZREM', P .. 'exp', id)
  local shared = l[8] == '1'
  if shared then
    redis.call('HINCRBY', P .. 'nleased', p, '-1')
  elseif redis.call('HGET', P .. 'leased', m) == id then
    redis.call('HDEL', P .. 'leased', m)
    redis.call('HINCRBY', P .. 'nleased', p, '-1')
  end
  siteended(p, l[7])
  if skey and skey ~= '' then
    local sk = P .. 'sess:' .. skey
    if redis.call('EXISTS', sk) == 1 then
      local live = redis.call('HINCRBY', sk, 'live', '-1')
      if live <= 0 then redis.call('PEXPIRE', sk, math.max(1, tonumber(redis.call('HGET', sk, 'ttl')) - (now - at))) end
    end
  end
  if cause ~= 'released' then redis.call('SET', P .. 'tomb:' .. id, cjson.encode({ cause = cause, endedAt = at, removal = removal }), 'PX', S.tomb) end
  local present = redis.call('HEXISTS', P .. 'mem:' .. p, m) == 1
  -- A member still carrying other shared leases stays out of ready:<p> (in part:<p> while it has room).
  local left, lu = 0, nil
  if shared then left, lu = sharedended(p, m, id, cause ~= 'member-removed' and at or nil) end
  if cause == 'member-removed' then
    if left > 0 then return m, p end
    -- Taken away on purpose: back in the list with the history it had (whoever revoked keeps it ineligible).
    if present then redis.call('ZADD', P .. 'ready:' .. p, lu or tonumber(l[6]) or 0, m) end
    return m, p
  end
  if present and left == 0 then redis.call('ZADD', P .. 'ready:' .. p, at == now and NOW or at, m) end
  if target and target ~= '' then tcrecord(target, m, cause == 'ttl' and 'expired' or outcome, at, restms(p)) end
  if outcome == 'error' then redis.call('HINCRBY', P .. 'err', m, '1') end
  if cause == 'released' then
    redis.call('HINCRBY', P .. 'out', m .. '|t', '1')
    if outcome == 'blocked' then redis.call('HINCRBY', P .. 'out', m .. '|b', '1') end
  end
  return m, p
end

-- Lazy expiry, as the memory manager does on every call.
local function expire()
  local due = redis.call('ZRANGEBYSCORE', P .. 'exp', '-inf', NOW)
  for _, id in ipairs(due) do endlease(id, 'ttl', 'ok', nil) end
end
expire()
`;
