-- Row-wise kernels of cute.lib (bf16 in and out, f32 math): softmax over rows of
-- 32768 x 4096 and 4096 x 32768, RMSNorm and LayerNorm over 32768 x 4096,
-- against the copy bandwidth measured in the same run. Checked against a
-- float64 CPU reference on sampled rows (every row in quick mode), the whole
-- output scanned for poison.
local cute = require "cute"
local rw = require "cute.lib.rowwise"

local function written(t)
  local h = t:to_host():doubles()
  for i = 0, t:size() - 1 do
    if h[i] ~= h[i] then return false, "element " .. i .. " was not written", h end
  end
  return true, nil, h
end

-- Compares rows of y (row-major M x N, coordinate order i + j * M) with ref(i)
-- -> a Lua array of N doubles; tolerance: bf16's half ulp plus the
-- approximations, relative to the row's largest magnitude.
local function check_rows(hy, Mr, N, every, ref, tol)
  for i = 0, Mr - 1, every do
    local r = ref(i)
    local scale = 0
    for j = 1, N do scale = math.max(scale, math.abs(r[j])) end
    for j = 0, N - 1 do
      local got, want = hy[i + j * Mr], r[j + 1]
      if math.abs(got - want) > tol * math.max(math.abs(want), scale * 2 ^ -6) then
        return false, string.format("row %d, column %d: %.6g, expected %.6g", i, j, got, want)
      end
    end
  end
  return true
end

return function(h)
  local seed = 500
  local function case(name, Mr, N, make_inputs, run, ref)
    h:case {
      name = name, shape = Mr .. "x" .. N, dtype = "bf16", bytes = 2 * Mr * N * 2, peer = "copy", goal = 0.85,
      setup = function()
        seed = seed + 1
        local s = make_inputs(seed)
        s.y = cute.tensor(cute.bf16, { Mr, N }, "row"):fill(0 / 0)
        return s
      end,
      run = run,
      check = function(s)
        local ok, msg, hy = written(s.y)
        if not ok then return false, msg end
        local hx = s.x:to_host():doubles()
        local every = h:quick() and 1 or math.max(1, math.floor(Mr / 64))
        return check_rows(hy, Mr, N, every, function(i) return ref(s, hx, i, Mr, N) end, 2 ^ -7)
      end,
      teardown = function(s)
        for _, key in ipairs { "x", "y", "w", "b" } do
          if s[key] then s[key]:free() end
        end
      end,
    }
  end

  local function softmax_ref(_, hx, i, Mr, N)
    local m = -math.huge
    for j = 0, N - 1 do m = math.max(m, hx[i + j * Mr]) end
    local out, sum = {}, 0
    for j = 0, N - 1 do
      out[j + 1] = math.exp(hx[i + j * Mr] - m)
      sum = sum + out[j + 1]
    end
    for j = 1, N do out[j] = out[j] / sum end
    return out
  end

  for _, shape in ipairs { { h:size(32768, 300), 4096 }, { h:size(4096, 40), h:size(32768, 32768 - 333) } } do
    local Mr, N = shape[1], shape[2]
    case("softmax", Mr, N, function(sd)
      return { x = cute.tensor(cute.bf16, { Mr, N }, "row"):normal(0, 2, sd) }
    end, function(s) rw.softmax(s.x, s.y) end, softmax_ref)
  end

  local Mr, N = h:size(32768, 257), 4096
  local function norm_inputs(sd)
    return { x = cute.tensor(cute.bf16, { Mr, N }, "row"):normal(0, 1, sd),
      w = cute.tensor(cute.bf16, N):uniform(0.5, 1.5, sd + 1000),
      b = cute.tensor(cute.bf16, N):uniform(-1, 1, sd + 2000) }
  end
  case("RMSNorm", Mr, N, norm_inputs, function(s) rw.rmsnorm(s.x, s.w, s.y, 1e-6) end, function(s, hx, i)
    local w = s.hw or s.w:to_host():doubles()
    s.hw = w
    local ss = 0
    for j = 0, N - 1 do ss = ss + hx[i + j * Mr] ^ 2 end
    local r = 1 / math.sqrt(ss / N + 1e-6)
    local out = {}
    for j = 0, N - 1 do out[j + 1] = hx[i + j * Mr] * r * w[j] end
    return out
  end)
  case("LayerNorm", Mr, N, norm_inputs, function(s) rw.layernorm(s.x, s.w, s.b, s.y, 1e-5) end, function(s, hx, i)
    local w, b = s.hw or s.w:to_host():doubles(), s.hb or s.b:to_host():doubles()
    s.hw, s.hb = w, b
    local mean = 0
    for j = 0, N - 1 do mean = mean + hx[i + j * Mr] end
    mean = mean / N
    local var = 0
    for j = 0, N - 1 do var = var + (hx[i + j * Mr] - mean) ^ 2 end
    local r = 1 / math.sqrt(var / N + 1e-5)
    local out = {}
    for j = 0, N - 1 do out[j + 1] = (hx[i + j * Mr] - mean) * r * w[j] + b[j] end
    return out
  end)
end
