-- Attention problems for the specs: fresh random inputs on the current device
-- (the simulator or the GPU), outputs and LSE poisoned (NaN) first, the result
-- checked by cute.testing.check_attention (float64).
local cute = require "cute"

local M = {}

local seed = 100
local function rand(t)
  seed = seed + 1
  return t:uniform(-1, 1, seed)
end

-- A (B, S, H, D) tensor whose memory is (B, H, S, D) when transposed is set:
-- strides other than the packed ones, D still contiguous.
local function make(dt, B, S, H, D, transposed)
  if transposed then
    return cute.tensor(dt, cute.make_layout({ B, S, H, D }, { H * S * D, D, S * D, 1 }))
  end
  return cute.tensor(dt, { B, S, H, D }, "row")
end

--- Runs one case: c = {dtype, b, sq, sk, hq, hkv, d, opts (forward's), varlen =
-- {cu_q, cu_k} (Lua lists), device_offsets (upload them), transposed, given_lse,
-- samples}; kernel: opts.kernel ("sm80" forces the sm_80 kernel on a Hopper GPU).
-- Returns check_attention's figures.
function M.run(c, kernel)
  local dt = cute.dtype.get(c.dtype or "bf16")
  local hq, hkv, d = c.hq or 1, c.hkv or c.hq or 1, c.d or 64
  local opts = {}
  for k, v in pairs(c.opts or {}) do opts[k] = v end
  opts.kernel = kernel
  local Q, K, V, O
  if c.varlen then
    local cq, ck = c.varlen[1], c.varlen[2]
    Q = rand(cute.tensor(dt, { cq[#cq], hq, d }, "row"))
    K = rand(cute.tensor(dt, { ck[#ck], hkv, d }, "row"))
    V = rand(cute.tensor(dt, { ck[#ck], hkv, d }, "row"))
    O = cute.tensor(dt, { cq[#cq], hq, d }, "row")
    if c.device_offsets then
      opts.cu_seqlens_q = cute.tensor(cute.i32, #cq):copy_from(cq)
      opts.cu_seqlens_k = cute.tensor(cute.i32, #ck):copy_from(ck)
    else
      opts.cu_seqlens_q, opts.cu_seqlens_k = cq, ck
    end
    if c.given_lse then opts.lse = cute.tensor(cute.f32, { hq, cq[#cq] }, "row") end
  else
    Q = rand(make(dt, c.b or 1, c.sq, hq, d, c.transposed))
    K = rand(make(dt, c.b or 1, c.sk, hkv, d, c.transposed))
    V = rand(make(dt, c.b or 1, c.sk, hkv, d, c.transposed))
    O = make(dt, c.b or 1, c.sq, hq, d, c.transposed)
    if c.given_lse then opts.lse = cute.tensor(cute.f32, { c.b or 1, hq, c.sq }, "row") end
  end
  O:fill(0 / 0)
  if opts.lse then opts.lse:fill(0 / 0) end
  local O2, lse = cute.lib.attention.forward(Q, K, V, O, opts)
  assert(O2 == O, "forward returns the O it was given")
  if opts.lse then assert(lse == opts.lse, "forward returns the LSE it was given") end
  cute.synchronize()
  local copts = { scale = opts.scale, causal = opts.causal, window = opts.window, samples = c.samples }
  if c.varlen then copts.cu_seqlens_q, copts.cu_seqlens_k = c.varlen[1], c.varlen[2] end
  return cute.testing.check_attention(Q, K, V, O, lse, copts)
end

-- Small cases for the simulator: every option, ragged lengths.
M.small = {
  { name = "bf16, head dim 64, Sq = Sk = 80, 2 batches, 2 heads", b = 2, sq = 80, sk = 80, hq = 2, d = 64 },
  { name = "f16, head dim 128, causal, Sq 50 < Sk 77", dtype = "f16", sq = 50, sk = 77, d = 128,
    opts = { causal = true } },
  { name = "bf16, causal, Sq 100 > Sk 40: fully masked rows", sq = 100, sk = 40, opts = { causal = true },
    masked = true },
  { name = "f16, grouped-query attention (4 query heads, 2 KV heads), non-causal", dtype = "f16", sq = 33, sk = 70,
    hq = 4, hkv = 2 },
  { name = "bf16, sliding window {16, 4}", sq = 90, sk = 90, opts = { window = { 16, 4 } } },
  { name = "bf16, window {-1, 8} and {20, -1}, Sq ~= Sk", sq = 40, sk = 75, opts = { window = { -1, 8 } } },
  { name = "f16, window {20, -1} with causal", dtype = "f16", sq = 70, sk = 50, opts = { window = { 20, -1 },
    causal = true }, masked = true },
  { name = "bf16, a softmax scale, a given LSE tensor", sq = 17, sk = 129, opts = { scale = 0.3 }, given_lse = true },
  { name = "bf16, strided (B, H, S, D) memory", b = 2, sq = 65, sk = 31, hq = 2, transposed = true },
  { name = "bf16, head dim 256, causal", sq = 40, sk = 50, d = 256, opts = { causal = true } },
  { name = "bf16, head dim 128, GQA 3:1, causal", sq = 70, sk = 70, d = 128, hq = 3, hkv = 1,
    opts = { causal = true } },
  { name = "varlen (Lua offsets, an empty sequence), causal", varlen = { { 0, 30, 30, 130, 137 },
    { 0, 50, 61, 100, 230 } }, hq = 2, hkv = 1, opts = { causal = true }, given_lse = true },
  { name = "varlen (device offsets), f16, head dim 128", dtype = "f16", d = 128, varlen = { { 0, 70, 75 },
    { 0, 20, 150 } }, device_offsets = true },
}

-- Larger cases for the GPU (rows sampled).
M.large = {
  { name = "bf16, head dim 64, 2 x 1024, 8 heads", b = 2, sq = 1024, sk = 1024, hq = 8, d = 64, samples = 300 },
  { name = "bf16, head dim 128, causal, 2 x 1000 x 1500", b = 2, sq = 1000, sk = 1500, hq = 4, d = 128,
    opts = { causal = true }, samples = 300 },
  { name = "f16, head dim 256, 777 x 2048", dtype = "f16", sq = 777, sk = 2048, hq = 4, d = 256, samples = 200 },
  { name = "bf16, GQA 8:2, window {256, 0}, 2048", sq = 2048, sk = 2048, hq = 8, hkv = 2, d = 128,
    opts = { window = { 256, 0 } }, samples = 300 },
  { name = "bf16, head dim 64, causal, 2 x 1800 x 2048, GQA 8:2 (on sm_90: 64 x 96 tiles, 3 CTAs an SM)", b = 2,
    sq = 1800, sk = 2048, hq = 8, hkv = 2, d = 64, opts = { causal = true }, samples = 300 },
  { name = "bf16, causal, Sq 3000 > Sk 1000 (masked rows)", sq = 3000, sk = 1000, hq = 2, d = 64,
    opts = { causal = true }, samples = 400 },
  { name = "varlen, 5 sequences, causal, head dim 128", varlen = { { 0, 1000, 1001, 1500, 3000, 3100 },
    { 0, 1000, 2100, 2600, 4100, 4300 } }, hq = 4, hkv = 4, d = 128, opts = { causal = true }, samples = 300,
    device_offsets = true },
  { name = "strided, f16, head dim 64", dtype = "f16", b = 3, sq = 513, sk = 700, hq = 4, d = 64, transposed = true,
    samples = 300 },
}

return M
