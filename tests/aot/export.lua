-- Exports the test kernels twice, under two prefixes (ma_, mb_), with shared
-- libraries: cutelua tests/aot/export.lua OUTDIR [arch...]
local cute = require "cute"
local K = require "tests.aot.kernels"
local dir = assert(arg[1], "usage: export.lua OUTDIR [arch...]")
local archs = { select(2, unpack(arg)) }
if #archs == 0 then archs = { "sm_80", "sm_90a" } end
for _, m in ipairs { { "mod_a", "ma" }, { "mod_b", "mb" } } do
  local paths = cute.export { name = m[1], prefix = m[2], dir = dir, arch = archs, shared = true,
    kernels = K.entries() }
  print(paths.header, paths.object, paths.shared)
end
