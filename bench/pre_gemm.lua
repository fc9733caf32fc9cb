--- The preprocessor's cost on a large kernel (not a test): the tensor-core
-- GEMM of cute.lib.gemm (128x128x32, 4 stages, 2x2 warps, bf16, sm_90a,
-- compile cache off) traced and compiled as a user's kernel (each repeat a
-- fresh kernel: a full trace), and the one-off cost of parsing and rewriting
-- its chunk. (It compared with and without preprocessing while the kernel was
-- written in the explicit form; plain Lua now, it traces only preprocessed.)
--   cutelua bench/pre_gemm.lua [repeats]
-- A copy of lua/cute/lib/gemm.lua is loaded as a user's chunk (its kernel is
-- plain Lua since 6835b7c; its tests for presence of a run-time predicate are
-- written `live ~= nil`, which the preprocessor leaves to Lua).
local cute = require "cute"
local host = require("cute._c").host
local source = require "cute.pre.source"
local repeats = tonumber(arg and arg[1]) or 7

local text = assert(source.chunk_text("@lua/cute/lib/gemm.lua"))
local G = assert(loadstring(text, "@bench/gemm_as_user.lua"))()

local function fake(r, c, stride)
  return cute.fake_tensor(cute.bf16, { r, c, 1 }, cute.make_layout({ r, c, 1 }, stride))
end
local A, B, C = fake(4096, 4096, { 4096, 1, 0 }), fake(4096, 4096, { 1, 4096, 0 }), fake(4096, 4096, { 4096, 1, 0 })
local function median(t)
  table.sort(t)
  return t[math.ceil(#t / 2)]
end

-- the first rewrite of the chunk: parse, rewrite, print, load (interpreted, as in a trace)
local cfg0 = { a_dtype = "bf16", acc_dtype = "f32", a_major = "k", b_major = "mn", a_vec = 8, b_vec = 8,
  group = 8, even = true, beta = false, bm = 128, bn = 128, bk = 32, stages = 4, wm = 2, wn = 2 }
jit.off()
local t0 = host.now_ns()
source.rewrite(G.kernel(cfg0).fn)
local first = tonumber(host.now_ns() - t0) / 1e6
jit.on()

print("| preprocess | trace (ms) | trace + compile (ms) | IR lines |")
print("|---|---|---|---|")
for _, pre in ipairs { true } do
  local tr, tot, lines = {}, {}, 0
  for i = 1, repeats do
    local cfg = {}
    for k, v in pairs(cfg0) do cfg[k] = v end
    cfg.ldmatrix = i -- a distinct key: a fresh kernel
    local k = G.kernel(cfg):with { arch = "sm_90a", cache = false, trace_key = false, preprocess = pre }
    local t1 = host.now_ns()
    local spec = k:_specialise(5, A, B, C, cute.f32(1), cute.f32(0))
    tot[#tot + 1] = tonumber(host.now_ns() - t1) / 1e6
    tr[#tr + 1] = spec.trace_ms
    local _, nl = spec.compiled:ir():gsub("\n", "")
    lines = nl
  end
  print(string.format("| %s | %.1f | %.0f | %d |", tostring(pre), median(tr), median(tot), lines))
end
print(string.format("first parse + rewrite of the chunk: %.1f ms", first))
