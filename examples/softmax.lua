-- Tutorial: fused softmax (after Triton's tutorial 02), the cutelua way.
--   cutelua examples/softmax.lua [ROWS COLS]
--
-- y[r, :] = exp(x[r, :] - max) / sum(exp(x[r, :] - max)) for each row r of a
-- row-major matrix. Unfused, that is three passes over memory (max, sum,
-- normalise); fused, one block per row reads its row once and writes it once,
-- keeping the running max and sum in registers and reducing them across the
-- block with warp shuffles and shared memory. Written in plain Lua (the
-- preprocessor makes the loops and the `if` on run-time values GPU code).
--
-- 1. The kernel, compiled (no GPU needed).
-- 2. With a GPU (or, without one, on the CPU simulator: small, untimed):
--    checked against a float64 softmax on sampled rows, then timed
--    against the copy bandwidth (one read and one write of the matrix is the
--    floor) and against cute.lib.rowwise.softmax (the tuned one: 16-byte
--    vectors, the row held in registers).
local cute = require "cute"
local common = require "cute.lib.common"

local ROWS = tonumber(arg and arg[1]) or 4096
local COLS = tonumber(arg and arg[2]) or 4096
local THREADS = 256
local LOG2E = 1.4426950408889634

-- 1. The kernel: block r takes row r; thread t its columns t, t + 256, ...
local softmax = cute.kernel("softmax", function(x, y)
  local r = cute.block_idx().x
  local t = cute.thread_idx().x
  local n = x.layout.shape[2]
  -- pass 1 over the row (from memory): the row's max, then the sum of exp
  local m = -math.huge
  for j = t, n - 1, THREADS do m = cute.max(m, x[{ r, j }]:to(cute.f32)) end
  m = common.block_reduce(m, common.max, -math.huge, THREADS)
  local s = 0.0
  for j = t, n - 1, THREADS do s = s + cute.exp2((x[{ r, j }]:to(cute.f32) - m) * LOG2E) end
  s = common.block_reduce(s, common.add, 0.0, THREADS)
  -- pass 2: normalise (the row's second read comes from L1/L2, not memory)
  local inv = 1.0 / s
  for j = t, n - 1, THREADS do
    y[{ r, j }] = (cute.exp2((x[{ r, j }]:to(cute.f32) - m) * LOG2E) * inv):to(y.dtype)
  end
end, { max_threads = THREADS })

local gpu = cute.gpu_available()
local h = softmax:with(gpu and {} or { arch = "sm_90a" }):compile(cute.fake_tensor(cute.bf16, { ROWS, COLS }, "row"),
  cute.fake_tensor(cute.bf16, { ROWS, COLS }, "row"))
print(h:report())
if not gpu then
  print("softmax: no usable GPU: on the CPU simulator (docs/simulator.md), 64 x 1000, no timing")
  cute.set_device("sim")
  ROWS, COLS = tonumber(arg and arg[1]) or 64, tonumber(arg and arg[2]) or 1000
end

-- 2. On the GPU (or the simulator)
local x = cute.tensor(cute.bf16, { ROWS, COLS }, "row")
local y = cute.tensor(cute.bf16, { ROWS, COLS }, "row")
x:uniform(-4, 4, 3)
y:fill(0 / 0)
local launch = softmax { grid = ROWS, block = THREADS }
launch(x, y)
cute.synchronize()
local hx, hy = x:to_host(), y:to_host()
local worst = 0
for k = 0, 15 do
  local r = (k * 7919) % ROWS
  local mx = -math.huge
  for j = 0, COLS - 1 do mx = math.max(mx, hx[{ r, j }]) end
  local sum = 0
  for j = 0, COLS - 1 do sum = sum + math.exp(hx[{ r, j }] - mx) end
  for j = 0, COLS - 1 do
    local want = math.exp(hx[{ r, j }] - mx) / sum
    local err = math.abs(hy[{ r, j }] - want) / want
    if err ~= err or err > 2 ^ -7 then
      error(string.format("y[%d, %d] = %s, expected %s", r, j, tostring(hy[{ r, j }]), tostring(want)))
    end
    worst = math.max(worst, err)
  end
end
print(string.format("checked 16 rows against float64: worst relative error %.3g (bf16 output: within 2^-7)", worst))
if not gpu then os.exit(0, true) end
local bytes = 2 * ROWS * COLS * 2
local mine = cute.bench(function() launch(x, y) end, { bytes = bytes })
local lib = cute.bench(function() cute.lib.rowwise.softmax(x, y) end, { bytes = bytes })
local copy = cute.bench(function() y:copy_from(x) end, { bytes = bytes })
print(string.format("%s, %dx%d bf16: this kernel %.0f GB/s, cute.lib.rowwise.softmax %.0f GB/s, cuMemcpyDtoD "
  .. "%.0f GB/s (ratios to the copy: %.2f, %.2f)", cute.device_info().name, ROWS, COLS, mine.gbps, lib.gbps, copy.gbps,
  mine.gbps / copy.gbps, lib.gbps / copy.gbps))
