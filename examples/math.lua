-- Tutorial: math functions in kernels (after Triton's tutorial 07 on libdevice),
-- the cutelua way.
--   cutelua examples/math.lua [N]
--
-- cute.exp, log, exp2, log2, sin, cos, tanh, erf, sqrt, rsqrt (and min, max,
-- floor, ceil) work on run-time values in kernels and on Lua numbers on the
-- host. On f32 they compile to libdevice's accurate versions (NVVM links
-- libdevice); with {fast = true} (or the kernel option fast_math) to PTX's
-- approximations (ex2.approx, lg2.approx, sin.approx, ...): faster, less
-- accurate. This tutorial measures both against float64 on the CPU, in ulps
-- of f32.
--
-- 1. The kernels compiled (no GPU needed): the instructions each variant uses.
-- 2. With a GPU: the worst error of each function over N inputs, both ways.
local cute = require "cute"

local N = tonumber(arg and arg[1]) or 65536
local FUNCS = {
  { "exp", math.exp, -20, 20 }, { "log", math.log, 1e-3, 1e3 }, { "sin", math.sin, -10, 10 },
  { "cos", math.cos, -10, 10 }, { "tanh", function(x) return (math.exp(2 * x) - 1) / (math.exp(2 * x) + 1) end, -5, 5 },
  { "sqrt", math.sqrt, 0, 1e4 }, { "exp2", function(x) return 2 ^ x end, -20, 20 },
}

local function kernel_for(name, fast)
  return cute.kernel("math_" .. name .. (fast and "_fast" or ""), function(x, y)
    local i = cute.block_idx().x * 256 + cute.thread_idx().x
    if i < cute.size(x) then y[i] = cute[name](x[i], fast and { fast = true } or nil) end
  end)
end

local gpu = cute.gpu_available()
local x, y = cute.fake_tensor(cute.f32, { N }), cute.fake_tensor(cute.f32, { N })
local function instructions(ptx)
  local seen, list = {}, {}
  for op in ptx:gmatch("\n%s+([%a][%w%.]*)") do
    if (op:find("approx") or op:find("^ex2") or op:find("^lg2") or op:find("^sin") or op:find("^cos")
        or op:find("^sqrt") or op:find("^tanh")) and not seen[op] then
      seen[op] = true
      list[#list + 1] = op
    end
  end
  return table.concat(list, " ")
end
local kernels = {}
for _, f in ipairs(FUNCS) do
  for _, fast in ipairs { false, true } do
    local k = kernel_for(f[1], fast)
    kernels[f[1] .. tostring(fast)] = k
    local ptx = k:with(gpu and {} or { arch = "sm_90a" }):compile(x, y):ptx()
    print(string.format("%-5s %-8s %s", f[1], fast and "fast" or "accurate", instructions(ptx)))
  end
end
if not gpu then
  -- (the simulator computes the approximations accurately: the fast forms'
  -- errors are the GPU's to show; docs/simulator.md)
  print("math: no usable GPU: on the CPU simulator (docs/simulator.md), 4096 inputs, the accurate forms")
  cute.set_device("sim")
  N = tonumber(arg and arg[1]) or 4096
end
x, y = cute.tensor(cute.f32, { N }), cute.tensor(cute.f32, { N })

-- 2. On the GPU: the worst error in f32 ulps (of the float64 result)
local function ulp(v)
  local a = math.abs(v)
  if a < 2 ^ -126 then return 2 ^ -149 end
  local e = math.floor(math.log(a, 2))
  return 2 ^ (e - 23)
end
for _, f in ipairs(FUNCS) do
  local name, ref, lo, hi = f[1], f[2], f[3], f[4]
  x:uniform(lo, hi, 5)
  local xs = x:to_table()
  local worst = {}
  for _, fast in ipairs { false, true } do
    y:fill(0 / 0)
    kernels[name .. tostring(fast)] { grid = cute.ceil_div(N, 256), block = 256 }(x, y)
    local ys = y:to_table()
    local w = 0
    for i = 1, N do
      local want = ref(xs[i])
      local e = math.abs(ys[i] - want) / ulp(want)
      if e ~= e then error(string.format("%s(%s) = %s", name, tostring(xs[i]), tostring(ys[i]))) end
      w = math.max(w, e)
    end
    worst[#worst + 1] = w
  end
  print(string.format("%-5s on [%g, %g]: worst %.1f ulp accurate, %.1f ulp fast", name, lo, hi, worst[1], worst[2]))
  -- libdevice's documented bounds are a few ulps; sin/cos near their zeros and
  -- exp2 on the approximation are where the fast forms lose most
  assert(worst[1] <= 4, name .. ": the accurate form is off by more than 4 ulps")
end
