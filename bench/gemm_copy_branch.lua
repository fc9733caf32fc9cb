-- The sm_80 kernel with the copies past the last k-tile skipped by a branch
-- (copy_branch, what cute.gemm plans when an operand's rows are not 4-byte
-- aligned or K is no multiple of the k-tile: docs/atoms.md, "Rows that are
-- not 4-byte aligned") against the same plan with them predicated off, timed
-- in the same run, and the two results compared (needs a GPU; the simulator
-- runs it at small sizes, untimed in any useful sense).
--   cutelua bench/gemm_copy_branch.lua [M N K ...]     (triples; default: the shapes below)
local cute = require "cute"
local G = require "cute.lib.gemm"

local shapes = {}
for i = 1, #arg, 3 do shapes[#shapes + 1] = { tonumber(arg[i]), tonumber(arg[i + 1]), tonumber(arg[i + 2]) } end
if #shapes == 0 then
  shapes = { { 4096, 4095, 4096 }, { 4096, 4095, 64 }, { 4097, 4095, 63 }, { 4096, 4096, 4000 }, { 2048, 2047, 2048 } }
end
print("| M x N x K (bf16, A and B row-major) | vec A, B | copy_branch TFLOP/s | predicated TFLOP/s | ratio "
  .. "| max |diff| |")
print("|---|---|---:|---:|---:|---:|")
for _, s in ipairs(shapes) do
  local m, n, k = s[1], s[2], s[3]
  local A = cute.tensor(cute.bf16, { m, k }, "row"):uniform(-1, 1, 1)
  local B = cute.tensor(cute.bf16, { k, n }, "row"):uniform(-1, 1, 2)
  local C1 = cute.tensor(cute.f32, { m, n }, "row"):fill(0 / 0)
  local C2 = cute.tensor(cute.f32, { m, n }, "row"):fill(0 / 0)
  local base = G.plan(A, B, C1, { kernel = "sm80" }).config
  local branch = { kernel = "sm80", config = { copy_branch = true } }
  local pred = { kernel = "sm80", config = { copy_branch = false } }
  local flops = 2 * m * n * k
  local rb = cute.bench(function() cute.gemm(A, B, C1, branch) end, { flops = flops })
  local rp = cute.bench(function() cute.gemm(A, B, C2, pred) end, { flops = flops })
  local a, b = C1:to_host():doubles(), C2:to_host():doubles()
  local diff = 0
  for i = 0, m * n - 1, math.max(1, math.floor(m * n / 100003)) do
    local d = math.abs(a[i] - b[i])
    if d ~= d then d = math.huge end -- an element one of them did not write (the poison)
    diff = math.max(diff, d)
  end
  print(string.format("| %dx%dx%d | %d, %d | %.1f | %.1f | %.3f | %.3g |", m, n, k, base.a_vec, base.b_vec, rb.tflops,
    rp.tflops, rb.tflops / rp.tflops, diff))
end
