-- setup_check: a tour of cutelua on this machine (runs anywhere, each step
-- says what it needs and what it skipped).
--   cutelua examples/setup_check.lua
--
-- 1. what this machine offers: the CUDA libraries found, and the GPU;
-- 2. a layout, drawn: CuTe's layout algebra runs in plain Lua;
-- 3. a kernel traced into cutelua's IR (no CUDA needed), compiled to PTX and a
--    cubin for sm_90a with its resources (libnvvm and nvJitLink needed);
-- 4. the kernel launched and its result checked against the CPU: on the GPU, or
--    without one on the CPU simulator.
-- Exits 0 when every step that could run passed, 1 when one failed.
local cute = require "cute"

local function step(n, title) print(string.format("\n%d. %s", n, title)) end
-- a library's error message, short: what failed and the hint, without the
-- list of paths tried (cute.libraries() has it)
local function short(msg)
  msg = tostring(msg):gsub("\n%s*", " ")
  local what = msg:match("^(.-); tried:") or msg
  local hint = msg:match("(%([^()]*%))%s*$")
  return hint and (what .. " " .. hint) or what
end

print("cutelua " .. cute.version() .. " on " .. jit.version .. " (" .. jit.os .. "/" .. jit.arch .. ")")

step(1, "This machine")
local libs = cute.libraries()
for _, key in ipairs { "cuda", "nvvm", "nvjitlink", "cublas", "cublaslt" } do
  local l = libs[key]
  print(string.format("  %-10s %s", key, l.ok and ("found: " .. l.path) or ("missing: " .. short(l.error))))
end
local gpu, why = cute.gpu_available()
if gpu then
  local info = cute.device_info()
  print(string.format("  GPU        %s, compute capability %d.%d, %d SMs", info.name, info.compute_capability[1],
    info.compute_capability[2], info.multiprocessor_count or info.sm_count or 0))
else
  print("  GPU        none usable: " .. short(why))
end

step(2, "A layout: 4 x 8 elements, column-major, tiled by 2 x 4 (cute.zipped_divide)")
local L = cute.make_layout({ 4, 8 })
print("  L = " .. tostring(L) .. ", its offsets:")
cute.print_layout(L)
local tiles = cute.zipped_divide(L, { 2, 4 })
print("  zipped_divide(L, {2, 4}) = " .. tostring(tiles) .. "  (mode 1: within a tile, mode 2: the tiles)")

step(3, "A kernel: y = a * x + y, traced from Lua")
local saxpy = cute.kernel("saxpy", function(a, x, y)
  local i = cute.block_idx().x * cute.block_dim().x + cute.thread_idx().x
  if i < cute.size(y) then y[i] = a * x[i] + y[i] end
end)
local n = 100003 -- not a multiple of the block: the edge is predicated
local fx, fy = cute.fake_tensor(cute.f32, n), cute.fake_tensor(cute.f32, n)
local failed = false
if not (libs.nvvm.ok and libs.nvjitlink.ok) then
  print("  compiling needs libnvvm and nvJitLink (the CUDA toolkit): skipped")
else
  local h = saxpy:with({ arch = "sm_90a" }):compile(cute.f32(2), fx, fy)
  local ptx = h:ptx()
  local fma = ptx:match("\n%s*(fma%.rn%.f32[^\n]*)")
  print(string.format("  PTX for sm_90a: %d lines; the multiply-add: %s", select(2, ptx:gsub("\n", "")),
    fma or "(none?)"))
  local r = h:resources().saxpy
  print(string.format("  cubin: %d registers a thread, %d bytes of stack, %d spills", r.registers, r.stack or 0,
    (r.spill_stores or 0) + (r.spill_loads or 0)))
  if not fma then failed = true end
end

step(4, gpu and "On the GPU" or "On the CPU simulator (no usable GPU; docs/simulator.md)")
if gpu and not (libs.nvvm.ok and libs.nvjitlink.ok) then
  print("  no compiler (step 3): skipped")
else
  if not gpu then cute.set_device("sim") end
  local x = cute.tensor(cute.f32, n):uniform(-1, 1, 1)
  local y = cute.tensor(cute.f32, n):uniform(-1, 1, 2)
  local hx, hy = x:to_table(), y:to_table()
  saxpy { grid = cute.ceil_div(n, 256), block = 256 } (cute.f32(2), x, y)
  cute.synchronize()
  local want = {}
  for i = 1, n do want[i] = 2 * hx[i] + hy[i] end
  local ok, msg = pcall(cute.testing.assert_close, y, want, { what = "y" })
  print(ok and string.format("  saxpy over %d elements: every element within f32 tolerance of the CPU's", n)
    or ("  FAILED: " .. tostring(msg)))
  if not ok then failed = true end
  x:free()
  y:free()
end

print(failed and "\nsetup_check: a step failed" or "\nsetup_check: done")
os.exit(failed and 1 or 0, true)
