-- vector_add: c = a + b on the GPU, every element checked against the CPU.
--   cutelua examples/vector_add.lua [n]
-- Where no GPU is usable it runs on the CPU simulator (docs/simulator.md).
local cute = require "cute"
local ffi = require "ffi"

local ok, why = cute.gpu_available()
if not ok and cute.current_device() ~= "sim" then
  print("vector_add: no usable GPU (" .. tostring(why):match("^[^\n]*") .. "): on the CPU simulator")
  cute.set_device("sim")
end

-- The body is plain Lua: the preprocessor (docs/tracer.md) makes the `if` on
-- a run-time comparison a branch on the GPU. The explicit form is
-- cute.if_(i:lt(cute.size(c)), function() c[i] = a[i] + b[i] end).
local vadd = cute.kernel("vadd", function(a, b, c)
  local i = cute.block_idx().x * cute.block_dim().x + cute.thread_idx().x
  if i < cute.size(c) then
    c[i] = a[i] + b[i]
  end
end)

-- not a multiple of the block: the edge is predicated
local n = tonumber(arg and arg[1]) or (cute.current_device() == "sim" and 100003 or 1000003)
local a = cute.tensor(cute.f32, n):uniform(-1, 1)
local b = cute.tensor(cute.f32, n):uniform(-1, 1)
local c = cute.tensor(cute.f32, n):fill(0 / 0) -- poisoned: every element must be written

vadd{ grid = cute.ceil_div(n, 256), block = 256 }(a, b, c)
cute.synchronize()

-- float + float rounded once: the double sum of two floats is exact, so
-- rounding it to float gives the IEEE single-precision sum
local ha, hb, hc = a:to_host(), b:to_host(), c:to_host()
local bad = 0
for i = 0, n - 1 do
  local want = ffi.new("float", ha[i] + hb[i])
  if hc[i] ~= tonumber(want) then
    bad = bad + 1
    if bad <= 5 then print(string.format("  c[%d] = %g, expected %g", i, hc[i], tonumber(want))) end
  end
end
print(string.format("vector_add: %d elements, %d wrong", n, bad))
if bad > 0 then os.exit(1) end
