/**
 * The lease store's scripts that publish the members and read the live leases (the acquire, release
 * and block scripts are scripts.ts'): the same prelude, so every one of them ends due leases first.
 */
import { PRELUDE } from "./prelude";

/**
 * ARGV: this replica's view as JSON {pools: {name: [cooldownMs, sessionTtlMs, restAfterOkMs (-1 = unset), rules, memberConcurrency]},
 * members: [[id, pool, eligible 0|1, labels as newline-framed 'k=v' lines ('' = none; labelLines)]]}. Replaces the published members: a member that left loses its
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
  -- Labels beside the members (one hash): read only by selecting acquires.
  if e[4] and e[4] ~= '' then redis.call('HSET', P .. 'lbl', e[1], e[4]) else redis.call('HDEL', P .. 'lbl', e[1]) end
end
local old = redis.call('HKEYS', P .. 'pools')
for _, p in ipairs(old) do
  local keep = want[p] or {}
  local mems = redis.call('HKEYS', P .. 'mem:' .. p)
  for _, m in ipairs(mems) do
    if keep[m] == nil then
      local ids = leasesof(m)
      redis.call('HDEL', P .. 'mem:' .. p, m)
      redis.call('ZREM', P .. 'ready:' .. p, m)
      if redis.call('HGET', P .. 'where', m) == p then
        redis.call('HDEL', P .. 'where', m)
        redis.call('HDEL', P .. 'lbl', m)
        redis.call('HDEL', P .. 'zone', m) -- the hash before labels (a store written by an older service)
        -- Its lease counters go with it: a member that comes back starts at 0, as in the memory manager,
        -- and the hashes the leader reads whole on every publication hold the members there are, not all there were.
        redis.call('HDEL', P .. 'err', m)
        redis.call('HDEL', P .. 'out', m .. '|t', m .. '|b')
      end
      for _, id in ipairs(ids) do endlease(id, 'member-removed', 'ok', nil) end
    end
  end
  if view.pools[p] == nil then redis.call('HDEL', P .. 'pools', p); redis.call('HDEL', P .. 'rok', p); redis.call('HDEL', P .. 'rules', p); poolchanged(p) end
end
for p, c in pairs(view.pools) do
  local was = poolcfg(p)
  redis.call('HSET', P .. 'pools', p, string.format('%d:%d:%d', c[1], c[2], c[5] or 1))
  poolchanged(p)
  -- A changed memberConcurrency moves members carrying shared leases into or out of part:<p>.
  if was and was.mc ~= (c[5] or 1) then
    for _, m in ipairs(redis.call('HKEYS', P .. 'mem:' .. p)) do
      local n = sharedcount(m)
      if n > 0 then sharedplace(p, m, n, tonumber(redis.call('HGET', P .. 'slu', m) or '0')) end
    end
  end
  -- Politeness (politeness-lua.ts): c[3] the pool's restAfterOk ms (-1 = the store's), c[4] its rules.
  if c[3] and c[3] >= 0 then redis.call('HSET', P .. 'rok', p, c[3]) else redis.call('HDEL', P .. 'rok', p) end
  if c[4] and #c[4] > 0 then redis.call('HSET', P .. 'rules', p, cjson.encode(c[4])) else redis.call('HDEL', P .. 'rules', p) end
  poolchanged(p)
end
for p, mems in pairs(want) do
  for m, e in pairs(mems) do
    if redis.call('HSETNX', P .. 'mem:' .. p, m, e) == 1 then
      redis.call('HSET', P .. 'where', m, p)
      if redis.call('HEXISTS', P .. 'leased', m) == 0 and sharedcount(m) == 0 then redis.call('ZADD', P .. 'ready:' .. p, 'NX', 0, m) end
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
