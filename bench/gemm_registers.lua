-- Registers and spills of cute.lib.gemm's kernels (not a test; no GPU): every
-- entry of the sm_80 kernel's configuration table (M.CONFIGS) at an even
-- problem and at the ragged bf16 4097x4095x63 of issue 18 (with the plan's
-- copy_branch and with the copies predicated off), compiled for sm_80 and
-- sm_90a, and gemm_sm90's tiles for sm_90a. Run it with two builds and compare
-- the tables (tools/ptx_snapshot.lua compares the code itself).
--   cutelua bench/gemm_registers.lua
local cute = require "cute"
local G = require "cute.lib.gemm"

local function fake(dt, r, c, major)
  local l = major == "row" and cute.make_layout({ r, c, 1 }, { c, 1, r * c }) or cute.make_layout({ r, c, 1 })
  return cute.fake_tensor(dt, { r, c, 1 }, l)
end
local rows = {}
local function row(what, arch, k, args)
  local r = k:with({ arch = arch }):compile(unpack(args)):resources()[1]
  rows[#rows + 1] = string.format("| %s | %s | %s | %d | %d | %d |", what, k.name, arch, r.registers, r.spill_stores,
    r.spill_loads)
end

local dtypes = { large16 = cute.bf16, medium16 = cute.bf16, small16 = cute.bf16, tf32 = cute.f32, int8 = cute.i8 }
local names = {}
for name in pairs(G.CONFIGS) do names[#names + 1] = name end
table.sort(names)
for _, name in ipairs(names) do
  local base, dt = G.CONFIGS[name], dtypes[name]
  local m, n, k = base.bm * 8, base.bn * 8, base.bk * 8
  local p = G.plan(fake(dt, m, k, "row"), fake(dt, k, n, "col"), nil, { arch = "sm_80", config = base })
  for _, arch in ipairs { "sm_80", "sm_90a" } do
    row(name .. " " .. m .. "x" .. n .. "x" .. k, arch, p.kernel, p.args)
  end
end
-- unaligned rows (element-wise copies): K = 63 (both operands), N = 4095 (B row-major)
for _, s in ipairs { { 4097, 4095, 63 }, { 4096, 4095, 64 } } do
  local m, n, k = s[1], s[2], s[3]
  local p = G.plan(fake(cute.bf16, m, k, "row"), fake(cute.bf16, k, n, "row"), nil, { arch = "sm_80" })
  local cfg = {}
  for key, v in pairs(p.config) do cfg[key] = v end
  cfg.copy_branch = nil
  local what = string.format("bf16 %dx%dx%d (vec %d, %d)", m, n, k, cfg.a_vec, cfg.b_vec)
  for _, arch in ipairs { "sm_80", "sm_90a" } do
    row(what .. ", the plan (copy_branch " .. tostring(p.config.copy_branch) .. ")", arch, p.kernel, p.args)
    row(what .. ", copies predicated off", arch, G.kernel(cfg), p.args)
  end
end
for _, c in ipairs {
  { "bf16 4096^3", cute.bf16, 4096, 4096, 4096 }, { "bf16 256x8192x1024", cute.bf16, 256, 8192, 1024 },
  { "bf16 16x4096x4096", cute.bf16, 16, 4096, 4096 }, { "e4m3 4096^3", cute.e4m3, 4096, 4096, 4096 },
  { "i8 1024^3", cute.i8, 1024, 1024, 1024 }, { "tf32 1024^3", cute.f32, 1024, 1024, 1024 },
} do
  local q = G.plan(fake(c[2], c[3], c[5], "row"), fake(c[2], c[5], c[4], "col"), nil, { arch = "sm_90a" })
  row(c[1] .. " (gemm_sm90)", "sm_90a", q.kernel, q.args)
end
print("| problem | kernel | arch | registers | spill stores | spill loads |")
print("|---|---|---|---:|---:|---:|")
print(table.concat(rows, "\n"))
