--- Entry point of the benchmark harness (scripts/bench runs it).
--   cutelua bench/run.lua [--quick] [--out DIR] [--only PATTERN] [suite...]
-- With no suite, runs every bench/suites/*.lua except selftest. --only runs the
-- cases whose "name shape" matches the Lua pattern (plain text works for most:
-- --only "weights GB/s").
package.path = "bench/?.lua;" .. package.path
local H = require "harness"

local out, suites, only = nil, {}, nil
local i = 1
while i <= #arg do
  local a = arg[i]
  if a == "--out" then
    out = arg[i + 1]
    i = i + 1
  elseif a == "--only" then
    only = arg[i + 1]
    if not only then
      io.stderr:write("bench: --only needs a pattern\n")
      os.exit(2)
    end
    i = i + 1
  elseif a == "--quick" then
    -- read by cute.bench.quick()
    require("ffi").cdef "int setenv(const char *, const char *, int);"
    require("ffi").C.setenv("CUTELUA_BENCH_QUICK", "1", 1)
  elseif a == "--check" then
    -- read by H.check_only(): every case once, checked, not timed, no peers
    require("ffi").cdef "int setenv(const char *, const char *, int);"
    require("ffi").C.setenv("CUTELUA_BENCH_CHECK", "1", 1)
  elseif a == "-h" or a == "--help" then
    print("usage: scripts/bench [--quick] [--check] [--out DIR] [--only PATTERN] [suite...]  (suites: "
      .. "bench/suites/*.lua)")
    os.exit(0)
  else
    suites[#suites + 1] = a
  end
  i = i + 1
end
if #suites == 0 then
  local p = io.popen("ls bench/suites/*.lua 2>/dev/null")
  for f in p:lines() do
    local name = f:match("([^/]+)%.lua$")
    if name ~= "selftest" then suites[#suites + 1] = name end
  end
  p:close()
end

local cute = require "cute"
local ok, why = cute.gpu_available()
if not ok then
  io.stderr:write("bench: no usable GPU: " .. tostring(why):match("^[^\n]*") .. "\n")
  os.exit(77)
end

local h = H.new()
h.only = only
for _, s in ipairs(suites) do h:run_suite(s) end
h:report(out)
if not h:all_correct() then
  io.stderr:write("bench: some kernels gave wrong results or failed (see the check column)\n")
  os.exit(1)
end
