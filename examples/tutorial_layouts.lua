-- The pictures of docs/tutorials/layouts.md (SVG), drawn from the layouts the
-- tutorial prints.
--   cutelua examples/tutorial_layouts.lua [DIR]     (default: a temporary directory)
local cute = require "cute"
local dir = arg and arg[1]
if not dir then
  dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p '" .. dir .. "'"))
end
local function draw(name, l)
  cute.print_svg(l, dir .. "/" .. name .. ".svg")
  print(string.format("%-14s %s", name, tostring(l)))
end
draw("col", cute.make_layout({ 4, 8 }))
draw("row", cute.make_layout({ 4, 8 }, { 8, 1 }))
draw("zipped_divide", cute.zipped_divide(cute.make_layout({ 8, 8 }), { 2, 4 }))
draw("blocked", cute.blocked_product(cute.make_layout({ 2, 2 }), cute.make_layout({ 2, 3 })))
draw("raked", cute.raked_product(cute.make_layout({ 2, 2 }), cute.make_layout({ 2, 3 })))
draw("sw128", cute.nvgpu.warpgroup.make_smem_layout_atom("K_SW128", cute.bf16))
local atom = cute.make_mma_atom(cute.nvgpu.warp.MmaF16BF16Op(cute.bf16, cute.f32, { 16, 8, 16 }))
cute.print_svg_mma(atom, dir .. "/mma_m16n8k16.svg")
print("mma_m16n8k16   " .. tostring(atom))
print("pictures in " .. dir)
