--- Runs a script with other copies of some modules: an A/B against the code
-- before a change, in separate processes (a module's kernels are keyed by
-- their trace keys; give the two copies different keys where the IR differs,
-- as a change of a kernel's code does by changing its key).
--   git show REV:lua/cute/lib/gemv.lua > /tmp/gemv_old.lua
--   cutelua bench/with_modules.lua cute.lib.gemv=/tmp/gemv_old.lua -- bench/gemv_probe.lua simt
local i, loaded = 1, {}
while arg[i] and arg[i] ~= "--" do
  local name, path = arg[i]:match("^([%w_%.]+)=(.+)$")
  if not name then
    error("bench/with_modules.lua: arguments are MODULE=PATH ... -- SCRIPT [ARGS], got " .. arg[i], 0)
  end
  local chunk = assert(loadfile(path))
  package.preload[name] = function(...) return chunk(...) end
  loaded[#loaded + 1] = name
  i = i + 1
end
local script = arg[i + 1]
if not script then error("bench/with_modules.lua: no script after --", 0) end
local rest = { [0] = script }
for j = i + 2, #arg do rest[#rest + 1] = arg[j] end
arg = rest -- luacheck: ignore 121 (the script's arguments)
io.stderr:write("with_modules: ", table.concat(loaded, ", "), " from other copies\n")
dofile(script)
