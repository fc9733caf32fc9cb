-- luacheck configuration (run by the test suite: `luacheck lua repl tests examples`).
std = "luajit"
max_line_length = 120
files["tests/spec/**/*_spec.lua"] = { std = "+busted" }
files["tests/run_specs.lua"] = { globals = { "arg" } }
files["bench/run.lua"] = { globals = { "arg" } }
-- The embedding example defines globals on purpose: C calls them by name.
files["examples/embed/kernels.lua"] = { globals = { "fill_ramp", "describe" } }
