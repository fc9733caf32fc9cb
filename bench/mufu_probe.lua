-- The multi-function unit's exponential, scalar f32 against the packed
-- half-precision forms (ex2.approx.f16x2, ex2.approx.ftz.bf16x2: sm_90):
-- elements a second of each, and the SASS each becomes (with a disassembler).
-- Does one packed instruction give two exponentials at the scalar rate?
--   cutelua bench/mufu_probe.lua [iterations (4096)]
local cute = require "cute"
local ITER = tonumber(arg[1]) or 4096
local CH = 8 -- independent chains a thread
local forms = {
  { name = "f32", text = "ex2.approx.ftz.f32 $0, $1;", c = "=f,f", dt = cute.f32, per = 1 },
  { name = "f16x2", text = "ex2.approx.f16x2 $0, $1;", c = "=r,r", dt = cute.u32, per = 2 },
  { name = "bf16x2", text = "ex2.approx.ftz.bf16x2 $0, $1;", c = "=r,r", dt = cute.u32, per = 2 },
}
local info = cute.device_info()
local blocks, threads = info.sm_count * 8, 256
print(string.format("%s: %d CTAs x %d threads, %d chains a thread, %d iterations", info.name, blocks, threads, CH,
  ITER))
for _, f in ipairs(forms) do
  local k = cute.kernel("mufu_" .. f.name, function(out, seed)
    local x = cute.make_rmem_tensor({ CH }, f.dt)
    for c = 0, CH - 1 do x[c] = (cute.thread_idx().x + seed + c):to(f.dt) end
    for _ in cute.range(ITER) do
      for c = 0, CH - 1 do x[c] = cute.asm(f.text, f.c, { x[c] }, { ret = f.dt }) end
    end
    local acc = x[0]
    for c = 1, CH - 1 do acc = cute.asm(f.dt == cute.f32 and "add.f32 $0, $1, $2;" or "xor.b32 $0, $1, $2;",
      f.dt == cute.f32 and "=f,f,f" or "=r,r,r", { acc, x[c] }, { ret = f.dt }) end
    out[cute.block_idx().x * threads + cute.thread_idx().x] = acc
  end)
  local out = cute.tensor(f.dt, blocks * threads)
  local run = function() k { grid = { blocks }, block = { threads } }(out, cute.i32(1)) end
  run()
  cute.synchronize()
  local r = cute.bench(run, { min_time_ms = 200 })
  local elems = blocks * threads * CH * ITER * f.per
  local per_clk = elems / (r.median_ms * 1e-3) / info.sm_count / (info.clock_mhz * 1e6)
  local ok, sass = pcall(function() return k:compile(out, cute.i32(1)):sass() end)
  local mufu = ok and select(2, sass:gsub("MUFU%.EX2[%w%.]*", "")) or -1
  local ops = {}
  if ok then for op in sass:gmatch("MUFU%.EX2[%w%.]*") do ops[op] = true end end
  local names = {}
  for o in pairs(ops) do names[#names + 1] = o end
  print(string.format("  %-7s %.3f ms  %.2f elements/clk/SM (at the rated clock)  SASS: %d MUFU (%s)", f.name,
    r.median_ms, per_clk, mufu, table.concat(names, " ")))
  out:free()
end
