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
    /** Test only: read the time from the key `<prefix>clock` (RedisStoreOptions.testClock). */
    testClock?: boolean;
}

import { PRELUDE } from "./prelude";

/** `lua` with the settings in place of its placeholder. */
export function withSettings(lua: string, s: ScriptSettings): string {
    const n = (v: number) => {
        if (!Number.isFinite(v) || v < 0)
            throw new RangeError(`lease store setting must be a finite number ≥ 0, got ${v}`);
        return String(Math.round(v));
    };
    const table = `{ tcd = ${n(s.targetCooldownMs)}, bbase = ${n(s.blockedBaseMs)}, bmax = ${n(s.blockedMaxMs)}, tomb = ${n(s.tombstoneMs)}, busy = ${n(s.busyRetryMs)}, idle = ${n(s.idleRetrySeconds)}, dttl = ${n(s.defaultTtlSeconds)}, mttl = ${n(s.maxTtlSeconds)}, clk = ${s.testClock ? 1 : 0} }`;
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

/**
 * ARGV: pool, target, session ('' = none), ttlSeconds, lease id, the member selector (`k=v` lines, '' =
 * any; labelLines), flags (`s` shared: a gateway lease, shared-lua.ts; `t` strict and `r` rotate: the
 * session's, AcquireRequest), the lease a gateway retry replaces ('' = none) and its outcome, the session's
 * idle TTL in seconds ('' = its pool's), then members to exclude (any number).
 */
export const ACQUIRE =
    PRELUDE +
    `
local pool, target, session, ttl, id = ARGV[A], ARGV[A + 1], ARGV[A + 2], tonumber(ARGV[A + 3]), ARGV[A + 4]
local flags = ARGV[A + 6]
local shared, strict, rotate = flags:find('s', 1, true) ~= nil, flags:find('t', 1, true) ~= nil, flags:find('r', 1, true) ~= nil
local sttl = tonumber(ARGV[A + 9]) or 0
-- A gateway retry's failed lease (AcquireRequest.replaces) ends before the pick, so its politeness
-- slot is the retry's and no other request takes it in between.
if ARGV[A + 7] ~= '' then endlease(ARGV[A + 7], 'released', ARGV[A + 8], nil) end
-- Members that already failed this request (a gateway retry): passed over like another zone's.
local excluded = {}
for i = A + 10, #ARGV do excluded[ARGV[i]] = true end
-- The selector: each wanted label a 'k=v' line between newlines, found in the member's published lines (lbl) by a
-- plain find. Neither keys nor values can hold '=' or a newline (src/model/labels.ts), so a line cannot
-- match across two. One HGET and O(labels selected) per member walked, whatever the member count.
local needles = {}
for kv in string.gmatch(ARGV[A + 5], '[^\\n]+') do needles[#needles + 1] = '\\n' .. kv .. '\\n' end
local function inzone(m)
  if excluded[m] then return false end
  if #needles == 0 then return true end
  local l = redis.call('HGET', P .. 'lbl', m) or ''
  for _, n in ipairs(needles) do
    if not string.find(l, n, 1, true) then return false end
  end
  return true
end
if ttl == nil or ttl <= 0 then ttl = S.dttl end
ttl = math.min(S.mttl, math.max(1, math.floor(ttl)))
local skey = session ~= '' and (pool .. '\\n' .. session) or ''
local function eligible(p, m) return redis.call('HGET', P .. 'mem:' .. p, m) == '1' end

-- score: m's in ready:<p> when the caller read it already (the LRU scan), else read here.
local function grant(m, p, state, rule, score)
  local prev
  if shared then
    prev = sharedgranted(p, m, id)
  else
    prev = score or redis.call('ZSCORE', P .. 'ready:' .. p, m) or '0'
    redis.call('ZREM', P .. 'ready:' .. p, m)
    redis.call('HSET', P .. 'leased', m, id)
  end
  redis.call('HINCRBY', P .. 'nleased', p, '1')
  local exp = now + ttl * 1000
  local exps = string.format('%d', exp) -- formatted once for both calls (NOW: the prelude's)
  redis.call('HSET', P .. 'lease:' .. id, 'proxy', m, 'pool', p, 'target', target, 'session', session, 'skey', skey, 'leasedAt', NOW, 'expiresAt', exps, 'prev', prev, 'rule', sitegranted(p, rule, m), 'shared', shared and '1' or '0')
  redis.call('ZADD', P .. 'exp', exps, id)
  if skey ~= '' then
    local sk = P .. 'sess:' .. skey
    local c = poolcfg(p)
    -- The session's idle TTL: the request's (\`_ttl_\`) shortens its pool's, never lengthens it.
    local st = c and c.st or 0
    if sttl > 0 and sttl * 1000 < st then st = sttl * 1000 end
    redis.call('HSET', sk, 'member', m, 'pool', p, 'ttl', st)
    redis.call('HINCRBY', sk, 'live', '1')
    redis.call('PERSIST', sk) -- never forgotten while one of its leases runs
  end
  return { 1, id, m, p, now, exp, state }
end

-- A sticky session keeps its member while that one is eligible, unleased, in scope and not blocked by target.
local sess = skey ~= '' and redis.call('HMGET', P .. 'sess:' .. skey, 'member', 'pool') or {}
local smember, spool = sess[1], sess[2]
-- rotate: the session's member sits this pick out (as a retry's failed member does); strict: a session
-- whose member cannot take the lease does not move — 'session-gone' when the member left or is not
-- eligible, else busy (pick.ts/manager.ts strictRefusal).
if smember and rotate then excluded[smember] = true
elseif smember then
  local blocked = false
  if target ~= '' then
    local u, b = tcget(target, smember)
    blocked = b > 0 and u > now
  end
  -- Politeness binds sessions too (pick.ts sessionSticks): a full site or a spaced member does not stick.
  local srule = rulefor(spool, target)
  local polite = not sitefull(spool, srule) and spaceduntil(spool, srule, smember) <= now
  if eligible(spool, smember) and hasroom(spool, smember, shared) and (pool == '' or pool == spool) and inzone(smember) and not blocked and polite then
    return grant(smember, spool, 'kept', srule)
  end
  if strict then
    if not eligible(spool, smember) then return { 0, 'session-gone', 0, smember } end
    return { 0, 'none-available', math.max(1, math.ceil(S.busy / 1000)) }
  end
end
local state = smember and 'rebound' or (skey ~= '' and 'new' or '')

local scope = pool ~= '' and { pool } or allpools()
-- bestRaw: bestScore as Redis wrote it, what grant stores as the lease's prev (as ZSCORE would answer).
local best, bestScore, bestRaw, skipped = nil, nil, nil, math.huge
-- The earliest politeness hold (pick.ts' held): { until, pool, rule host }.
local held = nil
local function hold(untilms, p, host)
  if not held or untilms < held[1] then held = { untilms, p, host } end
end
for _, p in ipairs(scope) do
  local c = poolcfg(p)
  local rule = c and rulefor(p, target)
  if c and sitefull(p, rule) then
    hold(now + S.busy, p, rule.host)
    c = nil -- passed over whole: the site has its maxConcurrency in flight through this pool
  end
  if c then
    -- Rested members in least-recently-used order (ties: by name); the first eligible one not resting
    -- for the target is this pool's pick.
    -- Small batches first: the head is nearly always eligible, and every fetched entry costs.
    local off, size = 0, 2
    local done = false
    local rested = c.cd == 0 and NOW or now - c.cd
    -- With a pick from an earlier pool, only members that could beat it (a score up to its own; a tie
    -- goes by name below) are worth reading: the others lose to it, and once something is picked the
    -- held and skipped ones no longer matter. Mostly an empty answer, and no eligibility check.
    if best and bestScore < now - c.cd then rested = bestRaw end
    while not done do
      -- The first batch's numbers as strings (the prelude's NOW says why).
      local batch = redis.call('ZRANGEBYSCORE', P .. 'ready:' .. p, '-inf', rested, 'WITHSCORES', 'LIMIT', off == 0 and '0' or off, size == 2 and '2' or size)
      if #batch == 0 then break end
      for i = 1, #batch, 2 do
        local m, score = batch[i], tonumber(batch[i + 1])
        if eligible(p, m) and inzone(m) then
          local u = target ~= '' and tcget(target, m) or 0
          local gap = u > now and 0 or spaceduntil(p, rule, m)
          if u > now then skipped = math.min(skipped, u)
          elseif gap > now then hold(gap, p, rule.host)
          else
            if not best or score < bestScore or (score == bestScore and m < best[1]) then best, bestScore, bestRaw = { m, p, rule }, score, batch[i + 1] end
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
-- A shared acquire no idle member could take: a member carrying shared leases with room, least loaded
-- first (shared.ts pickLeastLoaded), under the same filters.
if shared and not best then
  for _, p in ipairs(scope) do
    local rule = poolcfg(p) and rulefor(p, target)
    if poolcfg(p) and sitefull(p, rule) then hold(now + S.busy, p, rule.host)
    elseif poolcfg(p) then
      local m, score = pickloaded(p, function(m)
        if not eligible(p, m) or not inzone(m) then return false end
        local u = target ~= '' and tcget(target, m) or 0
        if u > now then skipped = math.min(skipped, u); return false end
        local gap = spaceduntil(p, rule, m)
        if gap > now then hold(gap, p, rule.host); return false end
        return true
      end)
      if m and (not best or score < bestScore) then best, bestScore, bestRaw = { m, p, rule }, score, nil end
    end
  end
end
if best then return grant(best[1], best[2], state, best[3], bestRaw) end
if held then return { 0, 'target-busy', math.max(1, math.ceil((held[1] - now) / 1000)), held[2], held[3] } end

-- Nothing to lease: the earliest moment something in scope could be (unavailable.ts). Whether the
-- scope has members at all is asked only now (it is not needed when something was found).
local function nomembers()
  for _, p in ipairs(scope) do
    if poolcfg(p) and redis.call('HLEN', P .. 'mem:' .. p) > 0 then return false end
  end
  return true
end
if nomembers() then return { 0, 'no-members', math.max(1, S.idle) } end
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
-- endlease's fields first (it reads none again), then the two only the answer needs.
local l = redis.call('HMGET', k, 'proxy', 'pool', 'target', 'skey', 'expiresAt', 'prev', 'rule', 'shared', 'session', 'leasedAt')
if not l[1] then
  local tomb = redis.call('GET', P .. 'tomb:' .. id)
  if tomb then return { 0, 'expired', tomb } end
  return { 0, 'unknown-lease' }
end
endlease(id, 'released', outcome, nil, l)
return { 1, l[1], l[2], l[3], l[9], l[10], l[5], tonumber(redis.call('HGET', P .. 'err', l[1]) or '0') }
`;

/** ARGV: member, removal (JSON). Ends the member's leases (its exclusive one, or its shared ones), if it has any. */
export const REVOKE =
    PRELUDE +
    `
local m, removal = ARGV[A], cjson.decode(ARGV[A + 1])
local ids = leasesof(m)
for _, id in ipairs(ids) do endlease(id, 'member-removed', 'ok', removal) end
return #ids > 0 and 1 or 0
`;

/** ARGV: member, target. A block reported after the fact: returns the rest-until time, or -1 for an unknown member. */
export const BLOCK =
    PRELUDE +
    `
local m, target = ARGV[A], ARGV[A + 1]
local p = redis.call('HGET', P .. 'where', m)
if not p then return -1 end
redis.call('HINCRBY', P .. 'out', m .. '|t', '1')
redis.call('HINCRBY', P .. 'out', m .. '|b', '1')
return tcrecord(target, m, 'blocked', now)
`;

export { PUBLISH, VIEW } from "./publish-scripts";
