--- cute.trace.tma: the bulk tensor engine in kernels: TMA loads (multicast), stores,
-- reductions and prefetches through a TMA atom, and non-tensor bulk copies.
-- Its instructions are cute.arch.<name> (cute.trace.atom's arch table looks
-- names up here).
local M = {}

--- The instructions, as cute.arch.<name>.
M.arch = {}

return M
