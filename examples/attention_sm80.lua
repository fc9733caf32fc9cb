-- Tutorial 06: fused attention, a FlashAttention-2 forward for sm_80 (after
-- Triton's tutorial 06), the cutelua way.
--   cutelua examples/attention_sm80.lua [B S H D [causal]]
--
-- O = softmax(scale Q K^T) V for every (batch, head), without ever storing the
-- S x S score matrix: one CTA holds a tile of query rows and walks over the
-- keys a tile at a time, keeping a running maximum and sum per row (the
-- online softmax) and rescaling its partial O as the maximum grows.
--
-- 1. The tiles and layouts (no GPU needed): the MMA atom, why the scores'
--    accumulator registers can feed the second product directly, and the
--    shared-memory tiles.
-- 2. The online softmax, in plain Lua: a row in blocks gives the same answer.
-- 3. The kernel of cute.lib.attention, compiled for this GPU (or sm_90a
--    without one): resources and instruction mix.
-- 4. A run, checked against float64 (cute.testing.check_attention), and with
--    a GPU timed in TFLOP/s; without one on the CPU simulator, small and untimed.
-- The kernel is lua/cute/lib/attention.lua (build()): read it alongside.
-- docs/attention.md documents the API (varlen, GQA, windows, decode).
local cute = require "cute"
local G = require "cute.lib.gemm"

local B = tonumber(arg and arg[1]) or 4
local S = tonumber(arg and arg[2]) or 4096
local H = tonumber(arg and arg[3]) or 16
local D = tonumber(arg and arg[4]) or 128
local CAUSAL = arg and arg[5] == "causal"

-- 1. Tiles and layouts.
--
-- A CTA takes BM = 128 query rows of one head; 8 warps each own 16 of them.
-- Per key tile (BN = 64 keys) it computes S = Q K^T (128 x 64, f32) and then
-- O += P V (128 x D) with P = exp(S - max): two GEMMs on m16n8k16 tensor-core
-- atoms (mma.sync). A row of S lives in one warp, in the 4 lanes of a "quad":
-- row maxima and sums need only two shuffles.
local atom = cute.make_mma_atom(cute.nvgpu.warp.MmaF16BF16Op(cute.bf16, cute.f32, { 16, 8, 16 }))
print(atom)
print("  A (thread, value) -> (m, k) of 16 x 16:", atom.tv_a)
print("  C (thread, value) -> (m, n) of 16 x 8: ", atom.tv_c)
-- The trick that keeps P in registers: the accumulators of two neighbouring
-- n8 tiles of S (columns 0-7 and 8-15) sit, lane by lane and value by value,
-- where the A operand of one k16 block of P V wants them. Lane 5, say:
local lane = 5
local function coord(idx, rows) return idx % rows, math.floor(idx / rows) end
local same = true
for v = 0, 7 do
  local am, ak = coord(atom.tv_a({ lane, v }), 16)              -- A's value v
  local cm, cn = coord(atom.tv_c({ lane, v % 4 }), 16)          -- C's value v % 4 ...
  cn = cn + 8 * math.floor(v / 4)                               -- ... of n8 tile v // 4
  print(string.format("  lane %d value %d: A wants P(%2d, %2d), the accumulator holds S(%2d, %2d)", lane, v, am, ak,
    cm, cn))
  same = same and am == cm and ak == cn
end
assert(same, "the C and A layouts should coincide")
print("  so P = exp2(S - max) is converted to bf16 in place: no trip through shared memory")
-- Shared memory: Q (128 x D), and two stages of K (64 x D) and V. K is the
-- "B" of Q K^T, K-major (D contiguous); V is the B of P V seen as (D, 64),
-- N-major (D still contiguous), which ldmatrix.trans reads. The tiles are
-- swizzled (16-byte chunks XORed with the row) so that cp.async writes and
-- ldmatrix reads are free of bank conflicts.
print("Q and K tiles in shared memory:", G.smem_layout(128, D, "k", 2))
print("V tile (as D x 64, N-major):    ", G.smem_layout(D, 64, "mn", 2))

-- 2. The online softmax. For one row of scores s_j (already scaled), in blocks:
--   m' = max(m, max_j s_j);  c = exp(m - m');  l' = c l + sum_j exp(s_j - m');  o' = c o + sum_j exp(s_j - m') v_j
-- and at the end o / l. The kernel does this in base 2 (exp2 is one
-- instruction) with the scale folded in: s_j = (q . k_j) * scale * log2(e),
-- and the log-sum-exp it returns is (m + log2 l) ln 2.
do
  math.randomseed(6)
  local s, v = {}, {}
  for j = 1, 12 do s[j], v[j] = math.random() * 8 - 4, math.random() end
  local m, l, o = -math.huge, 0, 0
  for blk = 0, 2 do -- three blocks of four keys
    local mb = m
    for j = 4 * blk + 1, 4 * blk + 4 do mb = math.max(mb, s[j]) end
    local c = math.exp(m - mb)
    l, o = l * c, o * c
    for j = 4 * blk + 1, 4 * blk + 4 do
      l = l + math.exp(s[j] - mb)
      o = o + math.exp(s[j] - mb) * v[j]
    end
    m = mb
  end
  local mx, z, ref = -math.huge, 0, 0
  for j = 1, 12 do mx = math.max(mx, s[j]) end
  for j = 1, 12 do z = z + math.exp(s[j] - mx) end
  for j = 1, 12 do ref = ref + math.exp(s[j] - mx) / z * v[j] end
  print(string.format("online softmax in 3 blocks: %.15f; all at once: %.15f", o / l, ref))
end

-- 3. The kernel, compiled
local gpu = cute.gpu_available()
local function fake(shape) return cute.fake_tensor(cute.bf16, shape, "row") end
local plan = cute.lib.attention.plan(fake({ B, S, H, D }), fake({ B, S, H, D }), fake({ B, S, H, D }),
  fake({ B, S, H, D }), { causal = CAUSAL, kernel = "sm80", arch = not gpu and "sm_90a" or nil })
print(plan.why)
local h = plan.kernel:compile(unpack(plan.args))
print(h:report())
local counts = {}
for op in h:ptx():gmatch("\n%s+([%a%d_]+)[%.%s]") do counts[op] = (counts[op] or 0) + 1 end
print(string.format("PTX: %d mma.sync, %d ldmatrix, %d cp.async, %d ex2 (one key tile's loop body)", counts.mma or 0,
  counts.ldmatrix or 0, counts.cp or 0, counts.ex2 or 0))

-- 4. A run: on the GPU, or small on the CPU simulator
if not gpu then
  print("attention_sm80: no usable GPU: on the CPU simulator (docs/simulator.md), small and untimed")
  cute.set_device("sim")
  if not (arg and arg[1]) then B, S, H, D = 1, 128, 2, 64 end
end
local Q = cute.tensor(cute.bf16, { B, S, H, D }, "row"):uniform(-1, 1, 1)
local K = cute.tensor(cute.bf16, { B, S, H, D }, "row"):uniform(-1, 1, 2)
local V = cute.tensor(cute.bf16, { B, S, H, D }, "row"):uniform(-1, 1, 3)
local O = cute.tensor(cute.bf16, { B, S, H, D }, "row"):fill(0 / 0)
local opts = { causal = CAUSAL, kernel = "sm80" }
local _, lse = cute.lib.attention.forward(Q, K, V, O, opts)
cute.synchronize()
local r = cute.testing.check_attention(Q, K, V, O, lse, { causal = CAUSAL, samples = gpu and 64 or nil })
print(string.format("checked %d rows against float64: worst error %.3g of sum_j p_j |v_j| (bf16: within 2^-7)", r.rows,
  r.max_rel))
if not gpu then os.exit(0, true) end
-- FLOPs: two GEMMs of 2 S S D each a head (half of them under a causal mask)
local flops = 4 * B * H * S * S * D * (CAUSAL and 0.5 or 1)
local t = cute.bench(function() cute.lib.attention.forward(Q, K, V, O, opts) end, { flops = flops })
print(string.format("%s, B %d, S %d, H %d, D %d%s bf16: %.0f TFLOP/s (%.3f ms)", cute.device_info().name, B, S, H, D,
  CAUSAL and ", causal" or "", t.tflops, t.median_ms))
