-- Tutorial: low-memory dropout (after Triton's tutorial 04), the cutelua way.
--   cutelua examples/dropout.lua [N]
--
-- Dropout zeroes each element with probability p and scales the others by
-- 1 / (1 - p). A framework usually stores the mask; here it is never stored:
-- it is a pure function of the seed and the element's index (Philox 4x32-10,
-- docs/interop.md), so the backward pass (or a test on the CPU) recomputes it
-- from the seed alone. One Philox call gives four 32-bit words, and its ten
-- rounds cost more than moving a float through memory, so each call serves
-- four elements. Which four is part of the mask's definition, and the
-- choice is made for the memory system: a block of 256 threads owns 1024
-- consecutive elements, and thread t of block b takes elements
-- 1024 b + 256 j + t (j = 0 .. 3) with the words j of call 256 b + t
-- (cute.rand4(seed, 256 b + t)). Each of the four loads and stores is then
-- 256 consecutive floats across the block (coalesced); giving a thread four
-- consecutive elements instead (4t .. 4t+3) made every access strided, and
-- measured slower than even one call an element. The kernel is plain Lua:
-- `if` and comparisons on run-time values go through the preprocessor.
--
-- 1. The kernel, compiled (no GPU needed): its PTX has Philox's mul.hi.u32,
--    about twenty of them (ten rounds of two) for four elements.
-- 2. With a GPU (or, without one, on the CPU simulator: small, untimed):
--    y = dropout(x) on random data, checked element by element against the
--    mask the host computes (cute.rand4 on the host: the same words, the
--    same element-to-word map), then
--    timed against the copy bandwidth (dropout reads x once and writes y
--    once: a copy's traffic), beside the one-call-an-element form.
local cute = require "cute"

local N = tonumber(arg and arg[1]) or 2 ^ 24
local P = 0.25 -- the drop probability
local SEED = 2024

-- 1. The kernel: block b, thread t owns elements 1024 b + 256 j + t, j = 0 .. 3
local dropout = cute.kernel(function(x, y, p, seed)
  local b, t = cute.block_idx().x, cute.thread_idx().x
  local u = { cute.rand4(seed, 256 * b + t) } -- four uniform f32 in [0, 1) from one Philox call
  for j = 0, 3 do -- unrolled while tracing: a Lua loop over Lua numbers
    local i = 1024 * b + 256 * j + t
    if i < cute.size(x) then y[i] = cute.where(u[j + 1] >= p, x[i] / (1 - p), 0) end
  end
end)

-- The same with one call an element (cute.rand(seed, i): word 0 of call i), to
-- time against: four times the Philox rounds for the same bytes.
local dropout1 = cute.kernel(function(x, y, p, seed)
  local i = cute.block_idx().x * cute.block_dim().x + cute.thread_idx().x
  if i < cute.size(x) then y[i] = cute.where(cute.rand(seed, i) >= p, x[i] / (1 - p), 0) end
end)

local gpu = cute.gpu_available()
local h = dropout:with(gpu and {} or { arch = "sm_90a" }):compile(cute.fake_tensor(cute.f32, { N }),
  cute.fake_tensor(cute.f32, { N }), cute.f32(P), cute.u32(SEED))
local ptx = h:ptx()
local mulhi = 0
for _ in ptx:gmatch("mul%.hi%.u32") do mulhi = mulhi + 1 end
print(string.format("dropout: %d mul.hi.u32 in the PTX (Philox's ten rounds of two), %d registers", mulhi,
  h:resources()[dropout.name].registers))
if not gpu then
  print("dropout: no usable GPU: on the CPU simulator (docs/simulator.md), 4096 elements, no timing")
  cute.set_device("sim")
  N = tonumber(arg and arg[1]) or 4096
end

-- 2. On the GPU (or the simulator)
local x, y = cute.tensor(cute.f32, { N }), cute.tensor(cute.f32, { N })
x:uniform(-1, 1, 7)
y:fill(0 / 0)
local launch = dropout { grid = cute.ceil_div(N, 1024), block = 256 } -- 256 threads, 1024 elements a block
launch(x, y, cute.f32(P), cute.u32(SEED))
cute.synchronize()
local xs, ys = x:to_table(), y:to_table()
local kept = 0
for c = 0, math.ceil(N / 1024) * 256 - 1 do -- call c: block c // 256, thread c % 256
  local u = { cute.rand4(SEED, c) } -- on the host: numbers, the same bits as the GPU's
  for j = 0, 3 do
    local i = 1024 * math.floor(c / 256) + 256 * j + c % 256
    if i < N then
      local keep = u[j + 1] >= P
      local got = ys[i + 1]
      if keep then
        kept = kept + 1
        if math.abs(got - xs[i + 1] / (1 - P)) > 1e-6 * math.abs(xs[i + 1]) + 1e-30 then
          error(string.format("y[%d] = %s, expected %s (kept)", i, tostring(got), tostring(xs[i + 1] / (1 - P))))
        end
      elseif got ~= 0 then
        error(string.format("y[%d] = %s, expected 0 (dropped)", i, tostring(got)))
      end
    end
  end
end
print(string.format("checked all %d elements against the host's mask: %.4f kept (1 - p = %.2f)", N, kept / N, 1 - P))
if not gpu then os.exit(0, true) end
local bytes = 2 * N * 4
local mine = cute.bench(function() launch(x, y, cute.f32(P), cute.u32(SEED)) end, { bytes = bytes })
local launch1 = dropout1 { grid = cute.ceil_div(N, 256), block = 256 }
local one = cute.bench(function() launch1(x, y, cute.f32(P), cute.u32(SEED)) end, { bytes = bytes })
local copy = cute.bench(function() y:copy_from(x) end, { bytes = bytes })
print(string.format("%s, %d floats: dropout %.0f GB/s (one Philox call an element: %.0f GB/s), cuMemcpyDtoD %.0f GB/s: "
  .. "ratio %.2f", cute.device_info().name, N, mine.gbps, one.gbps, copy.gbps, mine.gbps / copy.gbps))
