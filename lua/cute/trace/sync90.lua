--- cute.trace.sync90: Hopper synchronisation in kernels: mbarriers, proxy fences, named
-- barriers, elect, cluster barriers, distributed shared memory, setmaxnreg.
-- Its instructions are cute.arch.<name> (cute.trace.atom's arch table looks
-- names up here).
local M = {}

--- The instructions, as cute.arch.<name>.
M.arch = {}

return M
