-- The SM clock and the board's power while one of our kernels and its peer
-- each run back to back for a few seconds, sampled by nvidia-smi every 100 ms
-- (the first second of each left out): whether a kernel that takes the same time
-- as the peer at one clock runs at a lower clock under the power limit
-- (docs/benchmarks.md, twelfth session). The peers: torch's cuDNN SDPA for the
-- attention forward (B, S, H, D bf16), cuBLAS for the bf16 GEMM (B stored N x K), cuBLASLt for fp8.
--   cutelua bench/clocks.lua attention [D:CAUSAL:B:H:S (64:0:32:32:512)] [seconds (4)]
--   cutelua bench/clocks.lua gemm [MxNxK[:e4m3] (128x8192x8192)] [seconds (4)] [CONFIG ...]
-- (:e4m3: fp8 operands, bf16 out, against cuBLASLt's matmul)
-- (gemm: each CONFIG, e.g. "cluster=2x1" or "bn=128,stages=6", is also timed, as
-- gemm_sm90's opts.config fields: numbers, or MxN for a cluster)
local cute = require "cute"
local A = require "cute.lib.attention"
local G = require "cute.lib.gemm"
local now = require("cute._c").host.now_ns

local what, spec, secs = arg[1] or "attention", arg[2], tonumber(arg[3] or 4)
assert(what == "attention" or what == "gemm", "the first argument is attention or gemm")

-- samples of "clock, power" while fn runs, less the first second's; with
-- `own`, fn(file) starts and stops the sampler itself, into that file
local function sampled(fn, own)
  local f = os.tmpname()
  local calls, ns
  if own then
    calls, ns = fn(f)
  else
    os.execute("nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv,noheader,nounits -lms 100 > " .. f
      .. " 2>/dev/null & echo $! > " .. f .. ".pid")
    calls, ns = fn()
    os.execute("kill $(cat " .. f .. ".pid) 2>/dev/null; sleep 0.2")
  end
  local clk, pw = {}, {}
  local i = 0
  for line in io.lines(f) do
    i = i + 1
    local c, p = line:match("^%s*([%d%.]+),%s*([%d%.]+)")
    if c and i > 10 then clk[#clk + 1], pw[#pw + 1] = tonumber(c), tonumber(p) end
  end
  os.remove(f)
  os.remove(f .. ".pid")
  local function median(t)
    if #t == 0 then return 0 / 0 end
    table.sort(t)
    return t[math.ceil(#t / 2)]
  end
  return median(clk), median(pw), #clk, calls, ns
end

-- fn called back to back (batches of 20 and a wait) for `secs` seconds:
-- returns the calls and the nanoseconds. The first call (which may compile) is
-- made at once, before the sampler starts.
local function loop(fn)
  fn()
  cute.synchronize()
  return function()
    local t0, calls = now(), 0
    repeat
      for _ = 1, 20 do fn() end
      cute.synchronize()
      calls = calls + 20
    until tonumber(now() - t0) > secs * 1e9
    return calls, tonumber(now() - t0)
  end
end

local flops -- (of one call)
local function report(name, clk, pw, n, calls, ns)
  local line = string.format("%-12s SM clock %6.0f MHz  power %5.0f W  (%d samples)", name, clk, pw, n)
  if calls then
    line = line .. string.format("  %d calls, %.1f TFLOP/s", calls, flops * calls / (ns * 1e-9) / 1e12)
  end
  print(line)
end

local function attention()
  package.path = "bench/?.lua;" .. package.path
  local pr = require("attention_config").problem(spec or "64:0:32:32:512")
  local d, causal, b, h, s = pr.d, pr.causal, pr.b, pr.h, pr.s
  flops = pr.flops
  print(string.format("%s, attention d %d %s b %d h %d s %d, %d s each", cute.device_info().name, d,
    causal and "causal" or "no mask", b, h, s, secs))
  local Q, K, V, O, LSE = pr.Q, pr.K, pr.V, pr.O, pr.LSE
  local opts = { causal = causal, lse = LSE }
  report("cutelua", sampled(loop(function() A.forward(Q, K, V, O, opts) end)))
  for _, t in ipairs { Q, K, V, O, LSE } do t:free() end
  -- (torch's process starts the sampler itself, once it is set up: its import takes seconds)
  -- (the script starts at column 0: Python reads its indentation)
  local py = string.format([[
import subprocess, sys, time, torch
from torch.nn.attention import SDPBackend, sdpa_kernel
q, k, v = (torch.randn(%d, %d, %d, %d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=%s)
    torch.cuda.synchronize()
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits",
                            "-lms", "100"], stdout=open(sys.argv[1], "w"), stderr=subprocess.DEVNULL)
    t0, calls = time.time(), 0
    while time.time() - t0 < %d:
        for _ in range(20):
            torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=%s)
        torch.cuda.synchronize()
        calls += 20
    smi.terminate()
    print(calls, int((time.time() - t0) * 1e9))
  ]], b, h, s, d, causal and "True" or "False", secs, causal and "True" or "False")
  local f = os.tmpname()
  local fh = assert(io.open(f, "w"))
  fh:write(py)
  fh:close()
  report("torch cuDNN", sampled(function(samples)
    local p = io.popen("python3 " .. f .. " " .. samples .. " 2>/dev/null")
    local out = p:read("*a")
    p:close()
    local calls, ns = out:match("(%d+) (%d+)")
    return tonumber(calls), tonumber(ns)
  end, true))
  os.remove(f)
end

local function gemm()
  local m, n, k, dname = (spec or "128x8192x8192"):match("^(%d+)x(%d+)x(%d+):?(%w*)$")
  assert(m and (dname == "" or dname == "bf16" or dname == "e4m3"),
    "the shape is MxNxK[:bf16|:e4m3], e.g. 128x8192x8192 or 8192x8192x8192:e4m3")
  m, n, k = tonumber(m), tonumber(n), tonumber(k)
  local dt = dname == "e4m3" and cute.e4m3 or cute.bf16
  flops = 2 * m * n * k
  print(string.format("%s, gemm %s %dx%dx%d (B stored N x K, C bf16), %d s each", cute.device_info().name, dt.name,
    m, n, k, secs))
  local Am = cute.tensor(dt, { m, k }, "row"):uniform(-1, 1, 1)
  local Bm = cute.tensor(dt, { k, n }, "col"):uniform(-1, 1, 2)
  local Cm = cute.tensor(cute.bf16, { m, n }, "row")
  print("  " .. G.plan(Am, Bm, Cm).why)
  report("cute.gemm", sampled(loop(function() cute.gemm(Am, Bm, Cm) end)))
  for i = 4, #arg do
    local config = {}
    for key, v in arg[i]:gmatch("([%w_]+)=([^,]+)") do
      local cm, cn = v:match("^(%d+)x(%d+)$")
      if v == "true" or v == "false" then config[key] = v == "true"
      else config[key] = cm and { tonumber(cm), tonumber(cn) } or tonumber(v) or v end
    end
    local o = { kernel = "sm90", config = config }
    print("  " .. G.plan(Am, Bm, Cm, o).why)
    report(arg[i], sampled(loop(function() cute.gemm(Am, Bm, Cm, o) end)))
  end
  if dt == cute.e4m3 then
    -- cuBLASLt, column-major: C^T (N x M) = B'^T A' with B' (B's K x N column-major storage) transposed
    local lt = { a = Bm, b = Am, d = Cm, m = n, n = m, k = k, a_dtype = dt, b_dtype = dt, d_dtype = cute.bf16,
      trans_a = true }
    report("cuBLASLt", sampled(loop(function() cute.cublas.lt_matmul(lt) end)))
  else
    local spec_b = { a = Am, b = Bm, c = Cm, m = m, n = n, k = k, dtype = cute.bf16,
      c_dtype = cute.bf16, b_trans = true }
    report("cuBLAS", sampled(loop(function() cute.cublas.gemm_rowmajor(spec_b) end)))
  end
  for _, t in ipairs { Am, Bm, Cm } do t:free() end
end

if what == "gemm" then gemm() else attention() end
