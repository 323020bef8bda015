/**
 * The Lua side of per-site politeness (src/model/politeness.ts; the memory store's is
 * src/service/leases/politeness.ts), part of every script's prelude (scripts.ts), so the count and the
 * spacing are read and changed inside the same atomic step as the grant or the end of a lease.
 *
 * Keys under the prefix:
 * - `rules` hash: pool → JSON `[[host, maxConcurrency (0 = none), minIntervalMs (0 = none)], …]`, in
 *   the order they are tried (orderRules: exact names, then suffixes, longest first);
 * - `rok` hash: pool → its restAfterOkSeconds in ms (absent: the store's setting);
 * - `site:<pool>` hash: rule host → leases in flight (changed by grant and endlease only);
 * - `gap:<pool>\n<host>\n<member>`: a key that lives minIntervalMs from the member's grant for the site.
 */
export const POLITE_LUA = `
local function ruletarget(target)
  local t = string.lower(target)
  if string.sub(t, -1) == '.' then t = string.sub(t, 1, -2) end
  return t
end
-- Each pool's rules, read and decoded once per run (false: none); PUBLISH forgets them (poolchanged).
local rcache = {}
-- The pool's rule for target (politenessRuleFor): { host, max, gap } or nil.
local function rulefor(p, target)
  if target == '' then return nil end
  local rules = rcache[p]
  if rules == nil then
    local raw = redis.call('HGET', P .. 'rules', p)
    rules = raw and cjson.decode(raw) or false
    rcache[p] = rules
  end
  if not rules then return nil end
  local t = ruletarget(target)
  for _, r in ipairs(rules) do
    local h = r[1]
    local hit
    if string.sub(h, 1, 1) == '.' then
      hit = t == string.sub(h, 2) or (#t > #h and string.sub(t, -#h) == h)
    else
      hit = t == h
    end
    if hit then return { host = h, max = tonumber(r[2]), gap = tonumber(r[3]) } end
  end
  return nil
end
-- The site is at its cap in pool p: true.
local function sitefull(p, rule)
  if not rule or rule.max <= 0 then return false end
  return tonumber(redis.call('HGET', P .. 'site:' .. p, rule.host) or '0') >= rule.max
end
local function gapkey(p, rule, m) return P .. 'gap:' .. p .. '\\n' .. rule.host .. '\\n' .. m end
-- When member m may be granted for the rule's site again (0 = now).
local function spaceduntil(p, rule, m)
  if not rule or rule.gap <= 0 then return 0 end
  local left = redis.call('PTTL', gapkey(p, rule, m))
  if left <= 0 then return 0 end
  return now + left
end
local function sitegranted(p, rule, m)
  if not rule then return '' end
  redis.call('HINCRBY', P .. 'site:' .. p, rule.host, '1')
  if rule.gap > 0 then redis.call('SET', gapkey(p, rule, m), '1', 'PX', rule.gap) end
  return rule.host
end
local function siteended(p, host)
  if not host or host == '' then return end
  local k = P .. 'site:' .. p
  if redis.call('HINCRBY', k, host, '-1') <= 0 then redis.call('HDEL', k, host) end
end
-- The rest after an ok/error lease in pool p: its restAfterOkSeconds, or the store's setting.
local function restms(p)
  return tonumber(redis.call('HGET', P .. 'rok', p) or S.tcd)
end
`;
