-- The attention bar of issue 22: cute.lib.attention.forward (the Hopper kernel on
-- sm_90, the sm_80 FlashAttention-2 kernel elsewhere) against torch's
-- scaled_dot_product_attention, its flash and cuDNN backends each alone, measured
-- in the same run (bench/attention_torch.py, run once by this suite before its
-- cases; the peer is the faster backend a shape). Forward shapes: B * S = 16k
-- tokens, 32 heads at head dim 64 and 16 at 128 and 256, causal and not, S from
-- 512 to 16k; bf16, Q, K, V (B, S, H, D). Decode (cute.lib.attention.decode:
-- split-KV and a combine): a query token a sequence against a KV cache, GQA 32/8
-- heads, head dim 128, batch 1-64 and 4k-32k cached tokens, as a fraction of the
-- copy bandwidth while reading the cache once. Each output checked against float64
-- on sampled rows (cute.testing.check_attention), O poisoned first. Without torch
-- (or python3) the forward rows have no peer and say so.
local cute = require "cute"


-- torch's figures for the shapes (key "D:CAUSAL:B:H:S"), the best backend each
local function torch_peers(shapes)
  local args = {}
  for i, s in ipairs(shapes) do args[i] = table.concat(s, ":") end
  local p = io.popen("python3 bench/attention_torch.py " .. table.concat(args, " ") .. " 2>/dev/null")
  local best, header = {}, nil
  if not p then return best end
  for line in p:lines() do
    if line:sub(1, 1) == "#" then header = line:sub(3) end
    local backend, key, ms, tflops = line:match("^torch (%S+) (%S+) ([%d.]+) ([%d.]+)$")
    if backend then
      tflops = tonumber(tflops)
      if not best[key] or tflops > best[key].value then
        best[key] = { name = string.format("torch SDPA %s (%s)", backend, header or "torch"), value = tflops,
          unit = "TFLOP/s", ms = tonumber(ms) }
      end
    end
  end
  p:close()
  return best
end

return function(h)
  local A = cute.lib.attention
  local shapes = {}
  if h:quick() then
    shapes = { { 128, 0, 1, 2, 512 }, { 64, 1, 1, 2, 384 } }
  else
    for _, d in ipairs { 64, 128, 256 } do
      for _, causal in ipairs { 0, 1 } do
        for _, s in ipairs { 512, 2048, 8192, 16384 } do
          shapes[#shapes + 1] = { d, causal, math.max(1, math.floor(16384 / s)), d == 64 and 32 or 16, s }
        end
      end
    end
  end
  -- a shape's case name and shape string; torch runs the shapes that --only
  -- leaves (each costs it seconds)
  local function case_name(s) return "attention fwd bf16" .. (s[2] == 1 and ", causal" or "") end
  local function case_shape(s) return string.format("b%d h%d s%d d%d", s[3], s[4], s[5], s[1]) end
  local wanted = {}
  for _, s in ipairs(shapes) do
    if not h.only or (case_name(s) .. " " .. case_shape(s)):find(h.only) then wanted[#wanted + 1] = s end
  end
  local peers = (not h:quick() and not h.check_only() and #wanted > 0) and torch_peers(wanted) or {}

  for _, s in ipairs(shapes) do
    local d, causal, b, heads, seq = s[1], s[2] == 1, s[3], s[4], s[5]
    local key = table.concat(s, ":")
    local flops = 4 * b * heads * seq * seq * d * (causal and 0.5 or 1)
    local opts = { causal = causal }
    h:case {
      name = case_name(s), shape = case_shape(s), dtype = "bf16", flops = flops, goal = 1.0,
      peer = function() return peers[key] end,
      setup = function()
        local shape = { b, seq, heads, d }
        return { Q = cute.tensor(cute.bf16, shape, "row"):uniform(-1, 1, 1),
          K = cute.tensor(cute.bf16, shape, "row"):uniform(-1, 1, 2),
          V = cute.tensor(cute.bf16, shape, "row"):uniform(-1, 1, 3),
          O = cute.tensor(cute.bf16, shape, "row"):fill(0 / 0),
          LSE = cute.tensor(cute.f32, { b, heads, seq }, "row") }
      end,
      run = function(st) A.forward(st.Q, st.K, st.V, st.O, { causal = causal, lse = st.LSE }) end,
      check = function(st)
        local ok, e = pcall(cute.testing.check_attention, st.Q, st.K, st.V, st.O, st.LSE,
          { causal = opts.causal, samples = 8 })
        return ok, not ok and tostring(e) or nil
      end,
      teardown = function(st) for _, t in pairs(st) do t:free() end end,
    }
  end

  -- decode: one query token a sequence, the cache read once (bytes: K and V of every cached token)
  -- (pdl: each call's kernels programmatic dependent launches, opts.pdl, as in a model's
  -- chain of kernels: a call's first kernel starts while the previous call's last ends)
  local dec = h:quick() and { { 2, 1024 }, { 2, 1024, true } }
    or { { 1, 32768 }, { 8, 8192 }, { 16, 16384 }, { 64, 4096 }, { 1, 32768, true }, { 8, 8192, true } }
  for _, c in ipairs(dec) do
    local b, cache, pdl = c[1], c[2], c[3]
    local hq, hkv, d = 32, 8, 128
    local opts -- (decode's options: made with the case's LSE)
    h:case {
      name = pdl and "attention decode bf16 (cache GB/s, PDL chain)" or "attention decode bf16 (cache GB/s)",
      shape = string.format("b%d cache %d h%d/%d d%d", b, cache, hq, hkv, d),
      dtype = "bf16", bytes = 2 * b * cache * hkv * d * 2, peer = "copy", goal = 0.8,
      also = function(hh) return { hh:copy_bandwidth_of(2 * b * cache * hkv * d * 2) } end, -- the same size
      setup = function()
        local qs, ks = { b, 1, hq, d }, { b, cache, hkv, d }
        local st = { Q = cute.tensor(cute.bf16, qs, "row"):uniform(-1, 1, 4),
          K = cute.tensor(cute.bf16, ks, "row"):uniform(-1, 1, 5),
          V = cute.tensor(cute.bf16, ks, "row"):uniform(-1, 1, 6),
          O = cute.tensor(cute.bf16, qs, "row"):fill(0 / 0),
          LSE = cute.tensor(cute.f32, { b, hq, 1 }, "row") }
        opts = { lse = st.LSE, pdl = pdl or nil }
        return st
      end,
      run = function(st) A.decode(st.Q, st.K, st.V, st.O, opts) end,
      check = function(st)
        local ok, e = pcall(cute.testing.check_attention, st.Q, st.K, st.V, st.O, st.LSE, { samples = 16 })
        return ok, not ok and tostring(e) or nil
      end,
      teardown = function(st) for _, t in pairs(st) do t:free() end end,
    }
  end
end
