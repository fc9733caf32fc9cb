-- Attention on Hopper: the FlashAttention forward of cute.lib.attention_sm90, as
-- a lesson (tutorial 06 has the sm_80 kernel: examples/attention_sm80.lua).
--   cutelua examples/attention.lua [B S H D [causal]]
--
-- O = softmax(scale Q K^T) V, the S x S scores never stored: a CTA holds 128
-- query rows (192 at head dim 64 without a mask, bar small problems of up to 512
-- keys) of one head and walks the keys a block at a time with a running row maximum
-- and sum (the online softmax). On Hopper the two products run on wgmma, fed by TMA,
-- with the warps specialised:
--
--   warpgroup 0  producer    1 thread: TMA Q once; then per key block K_{n+1}, V_n
--                             into two rings (2 stages each), on mbarriers
--   warpgroup 1  consumer    rows 0-63:   S = Q K^T (wgmma SS), softmax, O += P V (wgmma RS)
--   warpgroup 2  consumer    rows 64-127: the same, taking turns with warpgroup 1
--                             (named barriers) so one's softmax overlaps the other's MMAs
--
-- Inside a consumer, block n's S is issued before block n-1's P V, and the
-- softmax of S_n runs while P V_{n-1} is still on the tensor cores.
--
-- 1. The layouts (no GPU needed): why P can stay in registers for the second
--    wgmma.
-- 2. The kernel, planned for sm_90a: its tiles, resources and SASS.
-- 3. With an H100/H200: a run checked against float64, then timed against torch's
--    scaled_dot_product_attention (flash and cuDNN backends) when torch is there;
--    without one, the same kernel on the CPU simulator as an sm_90a device.
-- The kernel is lua/cute/lib/attention_sm90.lua; docs/attention.md has the API.
local cute = require "cute"
local wg = cute.nvgpu.warpgroup

local gpu = cute.current_device() ~= "sim" and cute.gpu_available() and cute.device_info().compute_capability[1] == 9
local B = tonumber(arg and arg[1]) or (gpu and 2 or 1) -- the CPU simulator: small sizes
local S = tonumber(arg and arg[2]) or (gpu and 8192 or 300)
local H = tonumber(arg and arg[3]) or (gpu and 16 or 2)
local D = tonumber(arg and arg[4]) or 128
local CAUSAL = arg and arg[5] == "causal"


-- 1. The layouts.
--
-- S = Q K^T for 64 rows is one wgmma m64nBNk16 chain: each of a warpgroup's 128
-- threads holds BN / 2 f32 values of S (2 rows, BN / 4 columns a row). The second
-- product O += P V takes A (= P) from registers ("RS"): 16-bit pairs in the
-- layout of wg.a_rs_layout. Value kb * 8 + v of S's accumulator sits at the same
-- (row, column) as value v of P's k-block kb, so P = exp2(S - max) converts in
-- place, with no trip through shared memory. Thread 37, say:
local C, Ar = wg.c_layout(64), wg.a_rs_layout(16)
local t = 37
for v = 0, 7, 3 do
  local a = Ar({ t, v })
  local c = C({ t, 8 + v })
  print(string.format("thread %d: P value %d of k-block 1 is (%d, %d); S's value %d is (%d, %d)", t, v, a % 64,
    16 + math.floor(a / 64), 8 + v, c % 64, math.floor(c / 64)))
  assert(a % 64 == c % 64 and 16 + math.floor(a / 64) == math.floor(c / 64))
end
-- A row's 2 x BN / 4 values live in the 4 threads of a quad: its max and sum
-- take two shuffles. The scale folds into exp2: p = 2^(s * scale * log2(e) - m).

-- 2. The kernel for sm_90a (compiles anywhere).
local function tensors(fake)
  local mk = fake and function(dt, shape) return cute.fake_tensor(dt, shape, "row") end
    or function(dt, shape) return cute.tensor(dt, shape, "row") end
  return mk(cute.bf16, { B, S, H, D }), mk(cute.bf16, { B, S, H, D }), mk(cute.bf16, { B, S, H, D }),
    mk(cute.bf16, { B, S, H, D }), mk(cute.f32, { B, H, S })
end
local fq, fk, fv, fo, flse = tensors(true)
local plan = cute.lib.attention.plan(fq, fk, fv, fo, { causal = CAUSAL, lse = flse, arch = "sm_90a" })
print(string.format("\nplan for B=%d S=%d H=%d D=%d%s: %s", B, S, H, D, CAUSAL and " causal" or "", plan.why))
print(string.format("  kernel %s, grid %d x %d x %d, %d threads", plan.kernel.name, plan.grid[1], plan.grid[2],
  plan.grid[3], plan.block))
-- The choices behind the name, each the winner of a timed A/B on an H200
-- (docs/attention.md; opts.config overrides any): the tile, ping-pong, a
-- persistent grid at short sequences (with Q in two buffers at head dims 64 and
-- 128), O through shared memory and TMA stores where its buffer fits (else in
-- 16-byte stores), lazy rescaling at head dims 64 and 256 (O rescaled only when a
-- row's max grew by 2^8), and at head dim 64 under a causal mask at 1025-2048
-- keys three 64-row CTAs an SM; at head dims 64 and 128 the key blocks that
-- cross no edge in a loop without the mask (unmasked_loop), and under lazy
-- rescaling P converted to bf16 before O's rescale (early_p), which lets ptxas
-- spread the conversions among the exponentials.
local c = plan.config
print(string.format("  config: %dx%d, %d stages, pingpong %s, persistent %s, q_stages %d, o_tma %s, o_vec %s, "
  .. "lazy_rescale %s, %d CTA(s) an SM, unmasked_loop %s, early_p %s", c.bm, c.bn, c.stages, tostring(c.pingpong),
  tostring(c.persistent or false), c.q_stages or 1, tostring(c.o_tma or false), tostring(c.o_vec),
  tostring(c.lazy_rescale), c.ctas_per_sm or 1, tostring(c.unmasked_loop or false), tostring(c.early_p or false)))
local compiled = plan.kernel:compile(unpack(plan.args))
print(compiled:report())
local ok, sass = pcall(compiled.sass, compiled)
if ok then
  local counts = {}
  for op in sass:gmatch("%s(HGMMA%.[%w.]+)") do counts[op] = (counts[op] or 0) + 1 end
  for _, op in ipairs { "UTMALDG", "MUFU.EX2", "SHFL.BFLY", "BAR.SYNC", "BAR.ARV", "SYNCS" } do
    local n = 0
    for _ in sass:gmatch(op:gsub("%.", "%%.")) do n = n + 1 end
    counts[op] = n
  end
  local names = {}
  for k in pairs(counts) do names[#names + 1] = k end
  table.sort(names)
  for _, k in ipairs(names) do print(string.format("  %-28s %d", k, counts[k])) end
else
  print("  (no nvdisasm or cuobjdump: SASS not shown)")
end

-- 3. On a GPU: check, then time. Without one: the same kernel on the CPU
-- simulator as an sm_90a device (small sizes), checked, not timed.
if not gpu then
  print("\n== on the CPU simulator (no sm_90 GPU): sm_90a, checked, not timed")
  cute.set_device("sim", { arch = "sm_90a" })
end
local info = cute.device_info()
local Q, K, V, O, LSE = tensors(false)
Q:uniform(-1, 1, 1)
K:uniform(-1, 1, 2)
V:uniform(-1, 1, 3)
O:fill(0 / 0)
cute.lib.attention.forward(Q, K, V, O, { causal = CAUSAL, lse = LSE })
cute.synchronize()
local r = cute.testing.check_attention(Q, K, V, O, LSE, { causal = CAUSAL, samples = 64 })
print(string.format("\nchecked %d rows against float64 (max relative error %.2e)", r.rows, r.max_rel))
if not gpu then os.exit(0, true) end
local flops = 4 * B * H * S * S * D * (CAUSAL and 0.5 or 1)
local res = cute.bench(function() cute.lib.attention.forward(Q, K, V, O, { causal = CAUSAL, lse = LSE }) end,
  { flops = flops })
print(string.format("%s: cute.lib.attention %.3f ms, %.0f TFLOP/s", info.name, res.median_ms, res.tflops))
local p = io.popen(string.format("python3 bench/attention_torch.py %d:%d:%d:%d:%d 2>/dev/null", D, CAUSAL and 1 or 0,
  B, H, S))
local any = false
for line in (p and p:lines() or function() end) do
  local backend, ms, tf = line:match("^torch (%S+) %S+ ([%d.]+) ([%d.]+)$")
  if backend then
    any = true
    print(string.format("  torch SDPA %-5s %.3f ms, %.0f TFLOP/s: cutelua %.2fx", backend, tonumber(ms), tonumber(tf),
      res.tflops / tonumber(tf)))
  end
end
if p then p:close() end
if not any then print("  (no torch here: no peer timed)") end
