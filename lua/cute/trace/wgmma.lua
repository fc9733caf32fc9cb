--- cute.trace.wgmma: the warpgroup MMA in kernels: wgmma.mma_async (SS and RS), its fences,
-- commit and wait groups, and cute.gemm with a warpgroup tiled MMA.
-- Its instructions are cute.arch.<name> (cute.trace.atom's arch table looks
-- names up here).
local M = {}

--- The instructions, as cute.arch.<name>.
M.arch = {}

return M
