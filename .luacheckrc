-- luacheck configuration (run by the test suite: `luacheck lua cli tests examples bench tools`).
std = "luajit"
max_line_length = 120
files["tests/spec/**/*_spec.lua"] = { std = "+busted" }
files["tests/run_specs.lua"] = { globals = { "arg" } }
files["bench/run.lua"] = { globals = { "arg" } }
files["tools/ptx_snapshot.lua"] = { globals = { "arg" } } -- runs the examples with their own arg
-- The embedding example defines globals on purpose: C calls them by name.
files["examples/embed/kernels.lua"] = { globals = { "fill_ramp", "describe" } }
