-- Line info: with it on, each op carries a DILocation so the PTX .loc lines
-- name the Lua file and line it was traced from (two files here, one through a
-- DILexicalBlockFile), and the printer shows the locations.
return {
  sm = 80,
  locs = true,
  emit = { line_info = true },
  ptx = { '.file\t1 "kernels/axpy.lua"', '.file\t2 "lib/helpers.lua"', ".loc\t1 12 0", ".loc\t2 40 0", ".loc\t1 14 0" },
  no_ptx = { ", debug" },
  build = function(_, m)
    m:set_loc("kernels/axpy.lua", 10, "axpy")
    local k = m:kernel("axpy")
    local x, y = k:param("ptr<f32, global, 4>"), k:param("ptr<f32, global, 4>")
    local a = k:param("f32")
    m:set_loc("kernels/axpy.lua", 12, "axpy")
    local i = k:op("sreg", nil, { "tid.x" })
    local px, py = k:op("gep", nil, x, i), k:op("gep", nil, y, i)
    m:set_loc("lib/helpers.lua", 40, "scale")
    local s = k:op("mul", nil, k:op("load", nil, px), a)
    m:set_loc("kernels/axpy.lua", 14, "axpy")
    k:op("store", nil, py, k:op("add", nil, s, k:op("load", nil, py)))
  end,
}
