-- Draws the pictures of docs/hopper.md from cutelua's own layouts:
--
--   cutelua docs/img/hopper/generate.lua [outdir]      (default: docs/img/hopper)
--
-- tests/spec/hopper/docs_spec.lua runs it into a temporary directory and
-- checks that the committed pictures are what it draws.
local cute = require "cute"
local wg = require "cute.nvgpu.warpgroup"

local outdir = ... or (arg and arg[1]) or "docs/img/hopper"
local written = {}
local function path(name)
  written[#written + 1] = name
  return outdir .. "/" .. name
end

-- wgmma m64n8k16 with A in registers: A (RS fragment), B (shared memory:
-- every thread of the warpgroup reads all of it) and C
local rs = cute.make_mma_atom(wg.MmaF16BF16Op(cute.bf16, cute.f32, { 64, 8, 16 }, wg.OperandSource.RMEM))
cute.print_svg_mma(rs, path("wgmma_m64n8k16_rs.svg"))

-- the accumulator of m64n16: the m16n8 pattern, warp w on rows 16w..16w+15
local c16 = cute.make_mma_atom(wg.MmaF16BF16Op(cute.bf16, cute.f32, { 64, 16, 16 }))
cute.print_svg_tv(c16.tv_c, { 64, 16 }, path("wgmma_c_m64n16.svg"))

-- the 128-byte swizzle atoms of bf16, K-major (8 x 64) and MN-major (64 x 8):
-- each cell shows the element offset where (row, column) is stored
cute.print_svg(wg.make_smem_layout_atom(wg.SmemLayoutAtomKind.K_SW128, cute.bf16), path("smem_k_sw128_bf16.svg"))
cute.print_svg(wg.make_smem_layout_atom(wg.SmemLayoutAtomKind.MN_SW128, cute.bf16), path("smem_mn_sw128_bf16.svg"))

-- the swizzles in 16-byte chunks: row r of an 8-row atom, chunk c -> the
-- chunk it is stored in (c XOR r, masked to the mode's bits)
for b, name in ipairs { "sw32", "sw64", "sw128" } do
  local chunks = 2 ^ b
  local l = cute.make_composed_layout(cute.Swizzle(b, 0, 3), 0, cute.make_layout({ 8, chunks }, { chunks, 1 }))
  cute.print_svg(l, path("smem_chunks_" .. name .. ".svg"))
end

return written
