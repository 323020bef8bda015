/**
 * The Lua scripts of the Redis lease store (redis-store.ts). Each one is a whole acquire, release,
 * revoke, block report or member publication, run atomically by Redis (EVALSHA, EVAL on NOSCRIPT via
 * ioredis' defineCommand): however many replicas ask at once, each script sees the state the previous
 * one left, which is what keeps a proxy out of two live leases. They mirror the in-memory manager
 * (src/service/leases/manager.ts) step for step; docs/operations.md lists the keys.
 *
 * Keys live under the prefix KEYS[1] (`egress:<stack>:`) and are built inside the scripts, which Redis
 * Cluster would refuse; the store is a single Redis (with Sentinel or a replica for availability).
 * Time is Redis' own clock (TIME), so replicas on hosts with skewed clocks agree on expiries.
 *
 * The store's settings are written into each script's text once (withSettings), not sent with every
 * call: eight fewer arguments per request to encode and parse, measurably faster (docs/bench.md).
 */
export interface ScriptSettings {
    targetCooldownMs: number;
    blockedBaseMs: number;
    blockedMaxMs: number;
    tombstoneMs: number;
    busyRetryMs: number;
    idleRetrySeconds: number;
    defaultTtlSeconds: number;
    maxTtlSeconds: number;
}

/** `lua` with the settings in place of its placeholder. */
export function withSettings(lua: string, s: ScriptSettings): string {
    const n = (v: number) => {
        if (!Number.isFinite(v) || v < 0)
            throw new RangeError(`lease store setting must be a finite number ≥ 0, got ${v}`);
        return String(Math.round(v));
    };
    const table = `{ tcd = ${n(s.targetCooldownMs)}, bbase = ${n(s.blockedBaseMs)}, bmax = ${n(s.blockedMaxMs)}, tomb = ${n(s.tombstoneMs)}, busy = ${n(s.busyRetryMs)}, idle = ${n(s.idleRetrySeconds)}, dttl = ${n(s.defaultTtlSeconds)}, mttl = ${n(s.maxTtlSeconds)} }`;
    return lua.replace("__SETTINGS__", table);
}

/** Under the prefix: lease errors per member, counted by every replica's releases (the leader's health reads it). */
export const LEASE_ERRORS_KEY = "err";
/**
 * Under the prefix: outcomes per member, counted by every replica's releases and block reports, fields
 * `<member>|t` (all) and `<member>|b` (blocked). The leader turns their growth into its rotation's outcome
 * window (cluster/verdicts.ts), as it does with LEASE_ERRORS_KEY.
 */
export const LEASE_OUTCOMES_KEY = "out";

const PRELUDE = `
local P = KEYS[1]
local S = __SETTINGS__
local A = 1
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local function poolcfg(p)
  local c = redis.call('HGET', P .. 'pools', p)
  if not c then return nil end
  local cd, st = string.match(c, '^(%d+):(%d+)$')
  return { cd = tonumber(cd), st = tonumber(st) }
end

-- Target cooldowns: "until:blocks" per member in a hash per target (target-cooldowns.ts' rules).
local function tcget(target, m)
  local v = redis.call('HGET', P .. 'tc:' .. target, m)
  if not v then return 0, 0 end
  local u, b = string.match(v, '^(%d+):(%d+)$')
  return tonumber(u), tonumber(b)
end
local function tcrecord(target, m, outcome, at)
  local u, b = tcget(target, m)
  if outcome == 'blocked' then
    b = b + 1
    u = at + math.min(S.bmax, S.bbase * 2 ^ (b - 1))
  else
    if outcome ~= 'error' then b = 0 end
    u = math.max(u, at + S.tcd)
  end
  local k = P .. 'tc:' .. target
  if u <= now and b == 0 then redis.call('HDEL', k, m) else redis.call('HSET', k, m, string.format('%d:%d', u, b)) end
  -- The hash lives as long as its longest-kept entry (a block count is kept bmax past its rest).
  local keep = u - now + (b > 0 and S.bmax or 0)
  if keep > 0 and redis.call('PTTL', k) < keep then redis.call('PEXPIRE', k, keep) end
  return u
end

-- Ends lease id (cause released | ttl | member-removed). Returns the member and pool it was on.
local function endlease(id, cause, outcome, removal)
  local k = P .. 'lease:' .. id
  local l = redis.call('HMGET', k, 'proxy', 'pool', 'target', 'skey', 'expiresAt', 'prev')
  local m, p, target, skey = l[1], l[2], l[3], l[4]
  if not m then return nil end
  local at = cause == 'ttl' and tonumber(l[5]) or now
  redis.call('DEL', k)
  redis.call('ZREM', P .. 'exp', id)
  if redis.call('HGET', P .. 'leased', m) == id then
    redis.call('HDEL', P .. 'leased', m)
    redis.call('HINCRBY', P .. 'nleased', p, -1)
  end
  if skey and skey ~= '' then
    local sk = P .. 'sess:' .. skey
    if redis.call('EXISTS', sk) == 1 then
      local live = redis.call('HINCRBY', sk, 'live', -1)
      if live <= 0 then redis.call('PEXPIRE', sk, math.max(1, tonumber(redis.call('HGET', sk, 'ttl')) - (now - at))) end
    end
  end
  if cause ~= 'released' then redis.call('SET', P .. 'tomb:' .. id, cjson.encode({ cause = cause, endedAt = at, removal = removal }), 'PX', S.tomb) end
  local present = redis.call('HEXISTS', P .. 'mem:' .. p, m) == 1
  if cause == 'member-removed' then
    -- Taken away on purpose: back in the list with the history it had (whoever revoked keeps it ineligible).
    if present then redis.call('ZADD', P .. 'ready:' .. p, tonumber(l[6]) or 0, m) end
    return m, p
  end
  if present then redis.call('ZADD', P .. 'ready:' .. p, at, m) end
  if target and target ~= '' then tcrecord(target, m, cause == 'ttl' and 'expired' or outcome, at) end
  if outcome == 'error' then redis.call('HINCRBY', P .. 'err', m, 1) end
  if cause == 'released' then
    redis.call('HINCRBY', P .. 'out', m .. '|t', 1)
    if outcome == 'blocked' then redis.call('HINCRBY', P .. 'out', m .. '|b', 1) end
  end
  return m, p
end

-- Lazy expiry, as the memory manager does on every call.
local function expire()
  local due = redis.call('ZRANGEBYSCORE', P .. 'exp', '-inf', now)
  for _, id in ipairs(due) do endlease(id, 'ttl', 'ok', nil) end
end
expire()
`;

/** ARGV: pool, target, session ('' = none), ttlSeconds, lease id, zone ('' = any), then members to exclude (any number). */
export const ACQUIRE =
    PRELUDE +
    `
local pool, target, session, ttl, id, zone = ARGV[A], ARGV[A + 1], ARGV[A + 2], tonumber(ARGV[A + 3]), ARGV[A + 4], ARGV[A + 5]
-- Members that already failed this request (a gateway retry): passed over like another zone's.
local excluded = {}
for i = A + 6, #ARGV do excluded[ARGV[i]] = true end
local function inzone(m) return not excluded[m] and (zone == '' or (redis.call('HGET', P .. 'zone', m) or '') == zone) end
if ttl == nil or ttl <= 0 then ttl = S.dttl end
ttl = math.min(S.mttl, math.max(1, math.floor(ttl)))
local skey = session ~= '' and (pool .. '\\n' .. session) or ''
local function eligible(p, m) return redis.call('HGET', P .. 'mem:' .. p, m) == '1' end

local function grant(m, p, state)
  local prev = redis.call('ZSCORE', P .. 'ready:' .. p, m) or '0'
  redis.call('ZREM', P .. 'ready:' .. p, m)
  redis.call('HSET', P .. 'leased', m, id)
  redis.call('HINCRBY', P .. 'nleased', p, 1)
  local exp = now + ttl * 1000
  redis.call('HSET', P .. 'lease:' .. id, 'proxy', m, 'pool', p, 'target', target, 'session', session, 'skey', skey, 'leasedAt', now, 'expiresAt', exp, 'prev', prev)
  redis.call('ZADD', P .. 'exp', exp, id)
  if skey ~= '' then
    local sk = P .. 'sess:' .. skey
    local c = poolcfg(p)
    redis.call('HSET', sk, 'member', m, 'pool', p, 'ttl', c and c.st or 0)
    redis.call('HINCRBY', sk, 'live', 1)
    redis.call('PERSIST', sk) -- never forgotten while one of its leases runs
  end
  return { 1, id, m, p, now, exp, state }
end

-- A sticky session keeps its member while that one is eligible, unleased, in scope and not blocked by target.
local sess = skey ~= '' and redis.call('HMGET', P .. 'sess:' .. skey, 'member', 'pool') or {}
local smember, spool = sess[1], sess[2]
if smember then
  local blocked = false
  if target ~= '' then
    local u, b = tcget(target, smember)
    blocked = b > 0 and u > now
  end
  if eligible(spool, smember) and redis.call('HEXISTS', P .. 'leased', smember) == 0 and (pool == '' or pool == spool) and inzone(smember) and not blocked then
    return grant(smember, spool, 'kept')
  end
end
local state = smember and 'rebound' or (skey ~= '' and 'new' or '')

local scope = pool ~= '' and { pool } or redis.call('HKEYS', P .. 'pools')
local best, bestScore, total, skipped = nil, nil, 0, math.huge
for _, p in ipairs(scope) do
  local c = poolcfg(p)
  if c then
    total = total + redis.call('HLEN', P .. 'mem:' .. p)
    -- Rested members in least-recently-used order (ties: by name); the first eligible one not resting
    -- for the target is this pool's pick.
    -- Small batches first: the head is nearly always eligible, and every fetched entry costs.
    local off, size = 0, 2
    local done = false
    while not done do
      local batch = redis.call('ZRANGEBYSCORE', P .. 'ready:' .. p, '-inf', now - c.cd, 'WITHSCORES', 'LIMIT', off, size)
      if #batch == 0 then break end
      for i = 1, #batch, 2 do
        local m, score = batch[i], tonumber(batch[i + 1])
        if eligible(p, m) and inzone(m) then
          local u = target ~= '' and tcget(target, m) or 0
          if u > now then skipped = math.min(skipped, u)
          else
            if not best or score < bestScore or (score == bestScore and m < best[1]) then best, bestScore = { m, p }, score end
            done = true
            break
          end
        end
      end
      off = off + size
      size = math.min(size * 4, 128)
    end
  end
end
if best then return grant(best[1], best[2], state) end

-- Nothing to lease: the earliest moment something in scope could be (unavailable.ts).
if total == 0 then return { 0, 'no-members', math.max(1, S.idle) } end
local earliest = skipped
for _, p in ipairs(scope) do
  local c = poolcfg(p)
  if c then
    if tonumber(redis.call('HGET', P .. 'nleased', p) or '0') > 0 then earliest = math.min(earliest, now + math.max(S.busy, c.cd)) end
    local cooling = redis.call('ZRANGEBYSCORE', P .. 'ready:' .. p, '(' .. (now - c.cd), '+inf', 'WITHSCORES')
    for i = 1, #cooling, 2 do
      local m, score = cooling[i], tonumber(cooling[i + 1])
      if eligible(p, m) and inzone(m) then
        local at = score + c.cd
        if target ~= '' then at = math.max(at, tcget(target, m)) end
        earliest = math.min(earliest, at)
        if target == '' then break end
      end
    end
  end
end
local secs = earliest == math.huge and S.idle or math.ceil((earliest - now) / 1000)
return { 0, 'none-available', math.max(1, secs) }
`;

/** ARGV: lease id, outcome. */
export const RELEASE =
    PRELUDE +
    `
local id, outcome = ARGV[A], ARGV[A + 1]
local k = P .. 'lease:' .. id
local l = redis.call('HMGET', k, 'proxy', 'pool', 'target', 'session', 'leasedAt', 'expiresAt')
if not l[1] then
  local tomb = redis.call('GET', P .. 'tomb:' .. id)
  if tomb then return { 0, 'expired', tomb } end
  return { 0, 'unknown-lease' }
end
endlease(id, 'released', outcome, nil)
return { 1, l[1], l[2], l[3], l[4], l[5], l[6], tonumber(redis.call('HGET', P .. 'err', l[1]) or '0') }
`;

/** ARGV: member, removal (JSON). Ends the member's lease, if it has one. */
export const REVOKE =
    PRELUDE +
    `
local m, removal = ARGV[A], cjson.decode(ARGV[A + 1])
local id = redis.call('HGET', P .. 'leased', m)
if not id then return 0 end
endlease(id, 'member-removed', 'ok', removal)
return 1
`;

/** ARGV: member, target. A block reported after the fact: returns the rest-until time, or -1 for an unknown member. */
export const BLOCK =
    PRELUDE +
    `
local m, target = ARGV[A], ARGV[A + 1]
local p = redis.call('HGET', P .. 'where', m)
if not p then return -1 end
redis.call('HINCRBY', P .. 'out', m .. '|t', 1)
redis.call('HINCRBY', P .. 'out', m .. '|b', 1)
return tcrecord(target, m, 'blocked', now)
`;

/**
 * ARGV: this replica's view as JSON {pools: {name: [cooldownMs, sessionTtlMs]},
 * members: [[id, pool, eligible 0|1, zone]]}. Replaces the published members: a member that left loses its
 * lease (a late release gets 410 proxy_removed); survivors keep their leases and history.
 */
export const PUBLISH =
    PRELUDE +
    `
local view = cjson.decode(ARGV[A])
local want = {}
for _, e in ipairs(view.members) do
  want[e[2]] = want[e[2]] or {}
  want[e[2]][e[1]] = e[3]
  -- Zones beside the members (one hash): read only by zone-scoped acquires.
  if e[4] and e[4] ~= '' then redis.call('HSET', P .. 'zone', e[1], e[4]) else redis.call('HDEL', P .. 'zone', e[1]) end
end
local old = redis.call('HKEYS', P .. 'pools')
for _, p in ipairs(old) do
  local keep = want[p] or {}
  local mems = redis.call('HKEYS', P .. 'mem:' .. p)
  for _, m in ipairs(mems) do
    if keep[m] == nil then
      local id = redis.call('HGET', P .. 'leased', m)
      redis.call('HDEL', P .. 'mem:' .. p, m)
      redis.call('ZREM', P .. 'ready:' .. p, m)
      if redis.call('HGET', P .. 'where', m) == p then
        redis.call('HDEL', P .. 'where', m)
        redis.call('HDEL', P .. 'zone', m)
      end
      if id then endlease(id, 'member-removed', 'ok', nil) end
    end
  end
  if view.pools[p] == nil then redis.call('HDEL', P .. 'pools', p) end
end
for p, c in pairs(view.pools) do redis.call('HSET', P .. 'pools', p, string.format('%d:%d', c[1], c[2])) end
for p, mems in pairs(want) do
  for m, e in pairs(mems) do
    if redis.call('HSETNX', P .. 'mem:' .. p, m, e) == 1 then
      redis.call('HSET', P .. 'where', m, p)
      if redis.call('HEXISTS', P .. 'leased', m) == 0 then redis.call('ZADD', P .. 'ready:' .. p, 'NX', 0, m) end
    else
      redis.call('HSET', P .. 'mem:' .. p, m, e)
    end
  end
end
return 1
`;

/** No ARGV. The live leases (expired ones end first): [id, proxy, pool, target, session, leasedAt, expiresAt]... */
export const VIEW =
    PRELUDE +
    `
local out = {}
local ids = redis.call('ZRANGE', P .. 'exp', 0, -1)
for _, id in ipairs(ids) do
  local l = redis.call('HMGET', P .. 'lease:' .. id, 'proxy', 'pool', 'target', 'session', 'leasedAt', 'expiresAt')
  if l[1] then table.insert(out, { id, l[1], l[2], l[3], l[4], l[5], l[6] }) end
end
return out
`;
