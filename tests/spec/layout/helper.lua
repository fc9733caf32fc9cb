-- Shared helpers of the layout specs: enumerating small layouts, checking
-- layouts point-wise, and the test-vector file.
local cute = require "cute"

local H = {}

--- Every value of a layout as a Lua array (index i+1 holds L(i)).
function H.table_of(l)
  local n = cute.size(l)
  local t = {}
  for i = 0, n - 1 do t[i + 1] = l(i) end
  return t
end

--- Deep equality of IntTuples / numbers (plain or marked tables alike).
function H.same(a, b)
  if type(a) ~= "table" or type(b) ~= "table" then return a == b end
  if #a ~= #b then return false end
  for i = 1, #a do
    if not H.same(a[i], b[i]) then return false end
  end
  return true
end

--- All layouts with up to `max_rank` flat modes, extents from `extents`
-- and strides from `strides` (a deterministic sample, `limit` at most).
function H.layouts(extents, strides, max_rank, limit)
  local out = {}
  local function rec(shape, stride, r)
    if #shape > 0 then
      local s = #shape == 1 and shape[1] or { unpack(shape) }
      local d = #stride == 1 and stride[1] or { unpack(stride) }
      out[#out + 1] = cute.make_layout(s, d)
    end
    if r == max_rank then return end
    for _, e in ipairs(extents) do
      for _, d in ipairs(strides) do
        shape[#shape + 1], stride[#stride + 1] = e, d
        rec(shape, stride, r + 1)
        shape[#shape], stride[#stride] = nil, nil
      end
    end
  end
  rec({}, {}, 0)
  if limit and #out > limit then
    -- a deterministic spread over the whole list
    local picked, step = {}, #out / limit
    for i = 0, limit - 1 do picked[#picked + 1] = out[math.floor(i * step) + 1] end
    out = picked
  end
  return out
end

--- The path of the test vectors: tests/data/layout/layout_vectors.json in
-- this repository (copied from the reference set; README beside it), or
-- $CUTELUA_LAYOUT_VECTORS to try another file of the same format.
function H.vectors_path()
  local env = os.getenv("CUTELUA_LAYOUT_VECTORS")
  if env and env ~= "" then return env end
  local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
  return here .. "/../../data/layout/layout_vectors.json"
end

--- The line of the caller of the function that calls this (for checking
-- that errors point at the spec's own line).
function H.line_here() return debug.getinfo(2, "l").currentline end

--- Runs f, expects an error; returns the message.
function H.error_of(f, ...)
  local ok, msg = pcall(f, ...)
  assert(not ok, "expected an error")
  return msg
end

return H
