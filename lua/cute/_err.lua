--- cute._err: errors that point at the user's line.
--
-- cutelua's modules call each other, so a fixed `error(msg, 2)` often names a
-- line inside cutelua. `raise` walks the stack to the first frame that is not
-- a cutelua module (nor a C function) and reports that line: the user's call.
--
--   local err = require "cute._err"
--   err.raise("composition: shape %s does not divide %s", a, b)
local M = {}

-- Chunks of cutelua's own modules: bundled ("@lua/cute/x.lua") or read from a
-- checkout in development mode ("@/path/lua/cute/x.lua"), and the REPL logic.
local internal_cache = setmetatable({}, { __mode = "k" })
local function is_internal(source)
  local r = internal_cache[source]
  if r == nil then
    r = source == "=[C]" or source:find("^@lua/cute/") ~= nil or source:find("/lua/cute/[^/]+%.lua$") ~= nil
      or source:find("/lua/cute/.+/[^/]+%.lua$") ~= nil or source:find("^@cli/repl%.lua$") ~= nil
    internal_cache[source] = r
  end
  return r
end
M.is_internal = is_internal

--- The stack level (as `error` counts it, seen from the caller of this
-- function's caller) of the first frame outside cutelua; 1 if there is none.
function M.user_level(start)
  local level = (start or 1) + 2
  while true do
    local info = debug.getinfo(level, "S")
    if not info then return 1 end
    if not is_internal(info.source) then return level - 1 end
    level = level + 1
  end
end

--- "file:line" of the user's frame, or nil.
function M.where()
  local level = 2
  while true do
    local info = debug.getinfo(level, "Sl")
    if not info then return nil end
    if not is_internal(info.source) then
      return info.short_src .. ":" .. (info.currentline or 0), info.short_src, info.currentline
    end
    level = level + 1
  end
end

--- Raises string.format(fmt, ...) at the user's line. Arguments that are not
-- strings or numbers are passed through tostring (layouts print in CuTe notation).
function M.raise(fmt, ...)
  local args = { ... }
  for i = 1, select("#", ...) do
    local a = args[i]
    if type(a) ~= "string" and type(a) ~= "number" then args[i] = tostring(a) end
  end
  local msg = select("#", ...) > 0 and string.format(fmt, unpack(args, 1, select("#", ...))) or fmt
  error(msg, M.user_level(1))
end

--- " (did you mean 'x'?)" for the name in `names` (a list) closest to the
-- misspelt `name`, or "" when none is close (edit distance at most 2, or a
-- third of the name's length): for messages about unknown names.
function M.did_you_mean(name, names)
  name = tostring(name)
  local best, best_d = nil, math.max(2, math.floor(#name / 3))
  for _, cand in ipairs(names) do
    -- Levenshtein distance, two rows
    local prev, cur = {}, {}
    for j = 0, #cand do prev[j] = j end
    for i = 1, #name do
      cur[0] = i
      local a = name:byte(i)
      for j = 1, #cand do
        local cost = a == cand:byte(j) and 0 or 1
        cur[j] = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
      end
      prev, cur = cur, prev
    end
    local d = prev[#cand]
    if d <= best_d and (not best or d < best_d) then best, best_d = cand, d end
  end
  return best and string.format(" (did you mean '%s'?)", best) or ""
end

return M
