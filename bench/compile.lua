--- Compile-time benchmark of the NVVM backend (not a test).
--
--   cutelua bench/compile.lua [repeats]
--
-- For a small kernel (saxpy) and a large unrolled one (one warp's worth of
-- a tensor-core GEMM main loop: 128 ldmatrix.x4 and 512 mma.sync.m16n8k16
-- through inline PTX, ~360 KB of NVVM IR), per stage: writing the NVVM IR
-- text (a stand-in for the IR emitter, which is not this module's), libnvvm
-- (NVVM IR -> PTX), nvJitLink (PTX -> cubin), the cache key, a whole cold
-- compile through compiler.compile, a memory-cache hit, and a disk-cache hit
-- in a new process. Prints a Markdown table of medians and minima (ms).
local compiler = require "cute.compiler"
local host = require("cute._c").host

local repeats = tonumber(arg and arg[1]) or 5
local ARCH = "sm_90a"
-- Warnings (a spill) are counted, not printed once per repeat.
local warnings = {}
compiler.set_warning_handler(function(w) warnings[w] = (warnings[w] or 0) + 1 end)

local function now() return tonumber(host.now_ns()) / 1e6 end

local HEAD = 'target datalayout = "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-' ..
  'f32:32:32-f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64"\n' ..
  'target triple = "nvptx64-nvidia-cuda"\n'
local TAIL = "!nvvmir.version = !{!1}\n!1 = !{i32 2, i32 0, i32 3, i32 1}\n"

local function small_kernel(tag)
  return HEAD .. ([[
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
define void @saxpy(float %%a, float addrspace(1)* %%x, float addrspace(1)* %%y, i32 %%n) {
entry:
  %%t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %%b = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %%d = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %%bd = mul i32 %%b, %%d
  %%i = add i32 %%bd, %%t
  %%c = icmp slt i32 %%i, %%n
  br i1 %%c, label %%body, label %%exit
body:
  %%px = getelementptr float, float addrspace(1)* %%x, i32 %%i
  %%py = getelementptr float, float addrspace(1)* %%y, i32 %%i
  %%vx = load float, float addrspace(1)* %%px, align 4
  %%vy = load float, float addrspace(1)* %%py, align 4
  %%m = fmul float %%a, %%vx
  %%s = fadd float %%m, %%vy
  store float %%s, float addrspace(1)* %%py, align 4
  br label %%exit
exit:
  ret void
}
; %s
!nvvm.annotations = !{!0}
!0 = !{void (float, float addrspace(1)*, float addrspace(1)*, i32)* @saxpy, !"kernel", i32 1}
]]):format(tag) .. TAIL
end

-- One warp's fully unrolled main loop of a 64x64 warp tile over k = 256:
-- 16 steps of k16, each loading 4 A and 4 B fragments with ldmatrix.x4 from
-- shared memory (128 in all) and issuing 4 x 8 mma.sync.m16n8k16 (512 in
-- all) into 32 accumulator tiles of 4 f32 (128 registers), stored at the end.
local function large_kernel(tag)
  local out, n = { HEAD, "@smem = internal addrspace(3) global [32768 x i8] undef, align 128\n",
    "declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n",
    "define void @gemm_warp(float addrspace(1)* %out) {\nentry:\n",
    "  %lane = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n",
    "  %base0 = ptrtoint [32768 x i8] addrspace(3)* @smem to i32\n",
    "  %row = shl i32 %lane, 4\n  %base = add i32 %base0, %row\n" }, 0
  local function emit(s) out[#out + 1] = s end
  local function v() n = n + 1; return "%v" .. n end
  local function ldmatrix(offset)
    local a, r = v(), v()
    emit(("  %s = add i32 %%base, %d\n"):format(a, offset))
    emit(("  %s = call {i32, i32, i32, i32} asm sideeffect \"ldmatrix.sync.aligned.m8n8.x4.shared.b16 " ..
      "{$0, $1, $2, $3}, [$4];\", \"=r,=r,=r,=r,r\"(i32 %s)\n"):format(r, a))
    local regs = {}
    for j = 0, 3 do
      regs[j + 1] = v()
      emit(("  %s = extractvalue {i32, i32, i32, i32} %s, %d\n"):format(regs[j + 1], r, j))
    end
    return regs
  end
  local acc = {}
  for t = 1, 32 do acc[t] = { "0.0", "0.0", "0.0", "0.0" } end
  for step = 0, 15 do
    local A, B = {}, {}
    for i = 1, 4 do A[i] = ldmatrix(step * 2048 + (i - 1) * 512) end
    for j = 1, 4 do B[j] = ldmatrix(16384 + step * 1024 + (j - 1) * 256) end
    for i = 1, 4 do
      for nt = 1, 8 do
        local t = (i - 1) * 8 + nt
        local a, b, c, r = A[i], B[math.floor((nt + 1) / 2)], acc[t], v()
        local b0 = (nt - 1) % 2 * 2 + 1
        emit(("  %s = call {float, float, float, float} asm sideeffect " ..
          "\"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, " ..
          "{$10, $11, $12, $13};\", \"=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f\"(i32 %s, i32 %s, i32 %s, i32 %s, " ..
          "i32 %s, i32 %s, float %s, float %s, float %s, float %s)\n"):format(r, a[1], a[2], a[3], a[4], b[b0],
          b[b0 + 1], c[1], c[2], c[3], c[4]))
        local nc = {}
        for j = 0, 3 do
          nc[j + 1] = v()
          emit(("  %s = extractvalue {float, float, float, float} %s, %d\n"):format(nc[j + 1], r, j))
        end
        acc[t] = nc
      end
    end
  end
  for t = 1, 32 do
    for j = 1, 4 do
      local p = v()
      emit(("  %s = getelementptr float, float addrspace(1)* %%out, i32 %d\n"):format(p, (t - 1) * 4 + j - 1))
      emit(("  store float %s, float addrspace(1)* %s, align 4\n"):format(acc[t][j], p))
    end
  end
  emit("  ret void\n}\n; " .. tag .. "\n")
  emit("!nvvm.annotations = !{!0}\n!0 = !{void (float addrspace(1)*)* @gemm_warp, !\"kernel\", i32 1}\n")
  emit(TAIL)
  return table.concat(out)
end

local function stats(xs)
  table.sort(xs)
  return xs[math.floor((#xs + 1) / 2)], xs[1]
end

local function time(f, n)
  local xs = {}
  for i = 1, n do
    local t0 = now()
    f(i)
    xs[#xs + 1] = now() - t0
  end
  return stats(xs)
end

local rows = {}
local function row(what, med, min) rows[#rows + 1] = { what, med, min } end

-- A scratch disk cache, so the figures do not depend on the user's.
local dir = io.popen("mktemp -d /tmp/cutelua-bench-XXXXXX"):read("*l")
local base = compiler.options { arch = ARCH, cache = false, keep = "" }
local cached = base:with { cache = true, cache_dir = dir }

-- The first compile in a process also loads libnvvm and nvJitLink.
local t0 = now()
compiler.compile(small_kernel("warm-up"), base)
local first = now() - t0
row("first compile in a process (loads libnvvm + nvJitLink), small kernel", first, first)

local warp_mmas
local cases = { { "small (saxpy)", small_kernel }, { "large (128 ldmatrix.x4 + 512 mma.sync)", large_kernel } }
for _, case in ipairs(cases) do
  local name, make = case[1], case[2]
  local text = make("x")
  local ptx = compiler.nvvm_to_ptx(text, base)
  row(name .. ": NVVM IR size (KB)", #text / 1024, #text / 1024)
  row(name .. ": write NVVM IR text (Lua, stand-in for the emitter)", time(function(i) make("t" .. i) end, repeats))
  row(name .. ": libnvvm, NVVM IR -> PTX", time(function() compiler.nvvm_to_ptx(text, base) end, repeats))
  row(name .. ": nvJitLink (ptxas), PTX -> cubin", time(function() compiler.ptx_to_cubin(ptx, base) end, repeats))
  row(name .. ": cache key (SHA-256 of the text + options)", time(function() compiler.cache_key(text, base) end,
    repeats * 10))
  row(name .. ": whole cold compile (compiler.compile, no cache)",
    time(function(i) compiler.compile(make("cold" .. i), base) end, repeats))
  -- through the cache: fill it, then hit memory
  local m = compiler.compile(text, cached)
  row(name .. ": memory-cache hit (compiler.compile)",
    time(function() compiler.compile(text, cached) end, repeats * 10))
  if name:find("large") then warp_mmas = m end
  -- a disk hit needs a new process: the child times its own compile
  local script = dir .. "/child.lua"
  local f = io.open(script, "w")
  f:write(([[
    local compiler = require "cute.compiler"
    local host = require("cute._c").host
    local text = io.open(%q):read("*a")
    local t0 = tonumber(host.now_ns())
    local m = compiler.compile(text, { arch = %q, cache_dir = %q, keep = "" })
    local t1 = tonumber(host.now_ns())
    assert(m.origin == (os.getenv("CUTELUA_CACHE") == "0" and "compiled" or "disk"), m.origin)
    io.write(string.format("%%.3f\n", (t1 - t0) / 1e6))
  ]]):format(dir .. "/text.ll", ARCH, dir))
  f:close()
  f = io.open(dir .. "/text.ll", "w")
  f:write(text)
  f:close()
  local xs, procs = {}, {}
  for _ = 1, repeats do
    local p0 = now()
    local out = io.popen("env -u CUTELUA_CACHE -u CUTELUA_KEEP " .. arg[-1] .. " " .. script):read("*a")
    procs[#procs + 1] = now() - p0
    xs[#xs + 1] = tonumber(out) or error("child failed: " .. out)
  end
  row(name .. ": disk-cache hit in a new process (compiler.compile)", stats(xs))
  row(name .. ": that whole process, start to exit", stats(procs))
  -- and the cold path in a new process: loading the libraries included
  xs, procs = {}, {}
  for _ = 1, repeats do
    local p0 = now()
    local out = io.popen("env -u CUTELUA_KEEP CUTELUA_CACHE=0 " .. arg[-1] .. " " .. script .. " 2>&1"):read("*a")
    procs[#procs + 1] = now() - p0
    xs[#xs + 1] = tonumber(out:match("^[%d.]+")) or error("child failed: " .. out)
  end
  row(name .. ": cold compile in a new process (compiler.compile, loads the libraries)", stats(xs))
  row(name .. ": that whole process, start to exit", stats(procs))
end
os.execute("rm -rf '" .. dir .. "'")

print(("| what (%s, %d repeats) | median ms | min ms |"):format(ARCH, repeats))
print("|---|---:|---:|")
for _, r in ipairs(rows) do print(("| %s | %.2f | %.2f |"):format(r[1], r[2], r[3])) end
print()
print(warp_mmas:report())
for w, count in pairs(warnings) do print(("warning (%d times): %s"):format(count, w)) end
