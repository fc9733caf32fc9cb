-- The kernels of cute.lib at small sizes, each with a reference computed on
-- the CPU: what tests/spec/sim/lib_spec.lua runs on the simulator and
-- tests/spec/sim/vs_gpu_spec.lua on both the simulator and the GPU. A case
-- is { name, exact (bitwise comparison to the GPU), tol (relative, against
-- the reference), gpu_tol (against the GPU, where the default would not do),
-- run = function() -> outputs (lists of numbers), check = function(outputs)
-- -> what was computed and what it should be }. run makes its tensors on
-- the current device.
local cute = require "cute"

local K = {}

local function host(t)
  local h, n, out = t:to_host(), t:size(), {}
  for i = 0, n - 1 do out[i + 1] = h[i] end
  return out
end
K.host = host

-- a matrix (M x N, row-major) of a host list in coordinate order: m[i][j]
local function mat(list, m, n)
  local out = {}
  for i = 0, m - 1 do
    out[i] = {}
    for j = 0, n - 1 do out[i][j] = list[i + j * m + 1] end
  end
  return out
end

local cases = {}
local function case(c) cases[#cases + 1] = c end

case { name = "elementwise copy f32", exact = true, run = function()
  local x = cute.tensor(cute.f32, 3001):uniform(-1, 1, 11)
  local y = cute.tensor(cute.f32, 3001)
  require("cute.lib.elementwise").copy(x, y)
  return { host(x), host(y) }
end, check = function(o) return o[1], o[2] end }

case { name = "elementwise axpb bf16", tol = 1e-2, run = function()
  local x = cute.tensor(cute.bf16, 2500):uniform(-4, 4, 3)
  local y = cute.tensor(cute.bf16, 2500)
  require("cute.lib.elementwise").axpb(x, y, 1.5, -0.25)
  return { host(x), host(y) }
end, check = function(o)
  local want = {}
  for i, v in ipairs(o[1]) do want[i] = v * 1.5 - 0.25 end
  return o[2], want
end }

case { name = "elementwise add_broadcast f32", exact = true, run = function()
  local a = cute.tensor(cute.f32, { 37, 50 }, "row"):uniform(-1, 1, 5)
  local b = cute.tensor(cute.f32, 50):uniform(-1, 1, 6)
  local c = cute.tensor(cute.f32, { 37, 50 }, "row")
  require("cute.lib.elementwise").add_broadcast(a, b, c)
  return { host(a), host(b), host(c) }
end, check = function(o)
  local A, want = mat(o[1], 37, 50), {}
  for j = 0, 49 do for i = 0, 36 do want[i + j * 37 + 1] = A[i][j] + o[2][j + 1] end end
  return o[3], want
end, tol = 1e-6 }

for _, mode in ipairs { "iota", "uniform", "normal" } do
  case { name = "fill " .. mode .. " f32 (the device fill's values are the host's)", exact = true, run = function()
    local n = 5000
    local d = cute.tensor(cute.f32, n)
    require("cute.lib.fill").launch(d, mode, mode == "iota" and 3 or 0, mode == "iota" and 0.5 or 1, 42)
    local h = cute.tensor(cute.f32, n)
    if mode == "iota" then h:iota(3, 0.5) elseif mode == "uniform" then h:uniform(0, 1, 42) else h:normal(0, 1, 42) end
    return { host(d), host(h) }
  end, check = function(o) return o[1], o[2] end, tol = 1e-6 }
end

for _, op in ipairs { "sum", "max" } do
  case { name = "reduce " .. op .. " f32", tol = 1e-5, run = function()
    local x = cute.tensor(cute.f32, 20000):uniform(-1, 1, 9)
    local r = require("cute.lib.reduce").launch(x, op)
    return { host(x), host(r) }
  end, check = function(o)
    local acc = op == "sum" and 0 or -math.huge
    for _, v in ipairs(o[1]) do acc = op == "sum" and acc + v or math.max(acc, v) end
    return { o[2][1] }, { acc }
  end }
  case { name = "reduce rows " .. op .. " f32", tol = 1e-5, run = function()
    local x = cute.tensor(cute.f32, { 9, 700 }, "row"):uniform(-1, 1, 10)
    local out = cute.tensor(cute.f32, 9)
    require("cute.lib.reduce").rows(x, out, op)
    return { host(x), host(out) }
  end, check = function(o)
    local X, want = mat(o[1], 9, 700), {}
    for i = 0, 8 do
      local acc = op == "sum" and 0 or -math.huge
      for j = 0, 699 do acc = op == "sum" and acc + X[i][j] or math.max(acc, X[i][j]) end
      want[i + 1] = acc
    end
    return o[2], want
  end }
end

local function rowwise(name, m, n, extra)
  case { name = "rowwise " .. name .. " bf16", tol = 2e-2, run = function()
    local rw = require "cute.lib.rowwise"
    local x = cute.tensor(cute.bf16, { m, n }, "row"):uniform(-2, 2, 21)
    local y = cute.tensor(cute.bf16, { m, n }, "row")
    local w = cute.tensor(cute.bf16, n):uniform(0.5, 1.5, 22)
    local b = cute.tensor(cute.bf16, n):uniform(-1, 1, 23)
    if name == "softmax" then rw.softmax(x, y) elseif name == "rmsnorm" then rw.rmsnorm(x, w, y, 1e-6) else
      rw.layernorm(x, w, b, y, 1e-5)
    end
    return { host(x), host(w), host(b), host(y) }
  end, check = function(o)
    local X, W, Bv, want = mat(o[1], m, n), o[2], o[3], {}
    for i = 0, m - 1 do
      local r = {}
      if name == "softmax" then
        local mx, s = -math.huge, 0
        for j = 0, n - 1 do mx = math.max(mx, X[i][j]) end
        for j = 0, n - 1 do s = s + math.exp(X[i][j] - mx) end
        for j = 0, n - 1 do r[j] = math.exp(X[i][j] - mx) / s end
      elseif name == "rmsnorm" then
        local s = 0
        for j = 0, n - 1 do s = s + X[i][j] ^ 2 end
        local k = 1 / math.sqrt(s / n + 1e-6)
        for j = 0, n - 1 do r[j] = X[i][j] * k * W[j + 1] end
      else
        local mean, var = 0, 0
        for j = 0, n - 1 do mean = mean + X[i][j] end
        mean = mean / n
        for j = 0, n - 1 do var = var + (X[i][j] - mean) ^ 2 end
        local k = 1 / math.sqrt(var / n + 1e-5)
        for j = 0, n - 1 do r[j] = (X[i][j] - mean) * k * W[j + 1] + Bv[j + 1] end
      end
      for j = 0, n - 1 do want[i + j * m + 1] = r[j] end
    end
    return o[4], want, extra
  end }
end
rowwise("softmax", 5, 300)
rowwise("rmsnorm", 5, 300)
rowwise("layernorm", 4, 1000)

for _, v in ipairs { "transpose", "transpose32" } do
  case { name = v .. " f32", exact = true, run = function()
    local a = cute.tensor(cute.f32, { 70, 45 }, "row"):uniform(-1, 1, 31)
    local b = cute.tensor(cute.f32, { 45, 70 }, "row")
    require("cute.lib.transpose")[v](a, b)
    return { host(a), host(b) }
  end, check = function(o)
    local A, want = mat(o[1], 70, 45), {}
    for i = 0, 44 do for j = 0, 69 do want[i + j * 45 + 1] = A[j][i] end end
    return o[2], want
  end }
end

for _, beta in ipairs { 0, 0.5 } do
  case { name = "sgemm beta " .. beta, tol = 1e-4, run = function()
    local m, n, k = 70, 40, 33
    local A = cute.tensor(cute.f32, { m, k }, "row"):uniform(-1, 1, 41)
    local B = cute.tensor(cute.f32, { k, n }, "row"):uniform(-1, 1, 42)
    local C = cute.tensor(cute.f32, { m, n }, "row"):uniform(-1, 1, 43)
    local C0 = host(C)
    require("cute.lib.sgemm").gemm(A, B, C, 2, beta)
    return { host(A), host(B), C0, host(C) }
  end, check = function(o)
    local m, n, k = 70, 40, 33
    local A, B, C0, want = mat(o[1], m, k), mat(o[2], k, n), mat(o[3], m, n), {}
    for i = 0, m - 1 do
      for j = 0, n - 1 do
        local s = 0
        for kk = 0, k - 1 do s = s + A[i][kk] * B[kk][j] end
        want[i + j * m + 1] = 2 * s + beta * C0[i][j]
      end
    end
    return o[4], want
  end }
end

-- cute.gemm: the mma.sync GEMM of cute.lib (cp.async, ldmatrix or shared loads, a pipeline), odd sizes
-- (and one whose B rows, 33 bf16, are not 4-byte aligned: element-wise copies, which
-- the plan runs with copy_branch even though K is a multiple of the k-tile)
for _, g in ipairs { { dt = cute.bf16, tol = 1e-5 }, { dt = cute.f16, tol = 1e-5 }, { dt = cute.i8, exact = true },
  { dt = cute.e4m3, tol = 1e-5 }, { dt = cute.f32, tol = 1e-2, note = " (tf32 tensor cores)", gpu_tol = 2 ^ -9 },
  { dt = cute.bf16, tol = 1e-5, n = 33, k = 64, note = " (unaligned B rows)" } } do
  local m, n, k = 70, g.n or 50, g.k or 40
  case { name = "gemm " .. g.dt.name .. (g.note or ""), exact = g.exact, tol = g.tol or 0, gpu_tol = g.gpu_tol,
    run = function()
      local lo, hi = -1, 1
      if g.dt.is_integer then lo, hi = -8, 8 end
      local A = cute.tensor(g.dt, { m, k }, "row"):uniform(lo, hi, 51)
      local B = cute.tensor(g.dt, { k, n }, "row"):uniform(lo, hi, 52)
      local C = cute.gemm(A, B)
      return { host(A), host(B), host(C) }
    end, check = function(o)
      local A, B, want = mat(o[1], m, k), mat(o[2], k, n), {}
      for i = 0, m - 1 do
        for j = 0, n - 1 do
          local s = 0
          for kk = 0, k - 1 do s = s + A[i][kk] * B[kk][j] end
          want[i + j * m + 1] = s
        end
      end
      return o[3], want
    end }
end

K.cases = cases

--- The largest error of got against want, relative to max(|want|, 1); nil
-- and a message when their sizes differ or a value is NaN where the other is not.
function K.max_error(got, want)
  if #got ~= #want then return nil, string.format("%d values, %d expected", #got, #want) end
  local worst, at = 0, 0
  for i = 1, #got do
    local g, w = got[i], want[i]
    if (g ~= g) ~= (w ~= w) then return nil, string.format("value %d is %s, %s expected", i, g, w) end
    if g == g then
      local e = math.abs(g - w) / math.max(math.abs(w), 1)
      if e > worst then worst, at = e, i end
    end
  end
  return worst, at
end

return K
