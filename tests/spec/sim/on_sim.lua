-- Runs spec files with their GPU-tagged tests included on the CPU simulator (the
-- device is "sim" before any test runs): what tests/spec/sim/gpu_specs_spec.lua
-- starts in a child process.
--   cutelua tests/spec/sim/on_sim.lua FILE...
local cute = require "cute"
cute.set_device("sim")
local files = {}
for i = 1, #arg do files[i] = arg[i] end
arg = { [0] = "busted", unpack(files) } -- luacheck: ignore 121 (busted reads the global arg)
require "busted.runner" { standalone = false }
