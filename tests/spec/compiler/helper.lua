--- Helpers for the cute.compiler specs: test data, temporary directories,
-- and running other cutelua processes (with their own environment).
local H = {}

--- tests/data/nvvm/<name>, read whole.
function H.data(name)
  local f = assert(io.open("tests/data/nvvm/" .. name, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

function H.read(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end

function H.write(path, s)
  local f = assert(io.open(path, "wb"))
  f:write(s)
  f:close()
end

local function sh_quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end
H.quote = sh_quote

--- Runs a shell command; returns its output (stdout and stderr) and exit status.
function H.sh(cmd)
  local p = assert(io.popen("{ " .. cmd .. "; } 2>&1; echo \"exit=$?\""))
  local out = p:read("*a")
  p:close() -- (LuaJIT's close does not give the status: it is echoed instead)
  local body, code = out:match("^(.-)exit=(%d+)\n$")
  return body, tonumber(code)
end

function H.tmpdir()
  local dir = H.sh("mktemp -d /tmp/cutelua-spec-XXXXXX"):gsub("%s+$", "")
  assert(dir:find("^/tmp/cutelua%-spec%-"), "mktemp failed: " .. dir)
  return dir
end

function H.rm(dir)
  assert(dir:find("^/tmp/cutelua%-spec%-"), "refusing to remove " .. dir)
  os.execute("rm -rf " .. sh_quote(dir))
end

--- The cutelua executable the specs run under.
function H.cutelua()
  local bin = os.getenv("CUTELUA_BIN")
  return bin and (bin .. "/cutelua") or "build/cutelua"
end

-- `env` arguments for a child: every CUTELUA_* variable that could change
-- what it does is cleared first, then `env` (a table) is set.
local CLEARED = { "CUTELUA_ARCH", "CUTELUA_OPT_LEVEL", "CUTELUA_FAST_MATH", "CUTELUA_FTZ", "CUTELUA_LINEINFO",
  "CUTELUA_MAX_REGISTERS", "CUTELUA_PTXAS_OPTIONS", "CUTELUA_KEEP", "CUTELUA_DUMP_DIR", "CUTELUA_CACHE",
  "CUTELUA_CACHE_DIR" }
local function env_args(env)
  local parts = { "env" }
  for _, k in ipairs(CLEARED) do parts[#parts + 1] = "-u " .. k end
  for k, v in pairs(env or {}) do parts[#parts + 1] = sh_quote(k .. "=" .. v) end
  return table.concat(parts, " ")
end

--- Runs Lua code in a new cutelua process (its script written into dir, a
-- temporary directory the caller removes); returns its output and exit status.
function H.run(code, env, dir)
  assert(dir, "H.run: give the temporary directory for the script")
  local script = dir .. "/script-" .. tostring(math.random(1e9)) .. ".lua"
  H.write(script, code)
  return H.sh(env_args(env) .. " " .. sh_quote(H.cutelua()) .. " " .. sh_quote(script))
end

--- Starts n copies of the code at once and waits for all; returns the
-- outputs (each process writes its own file) and the number that failed.
function H.run_many(n, code, env, dir)
  local script = dir .. "/many.lua"
  H.write(script, code)
  local cmds = {}
  for i = 1, n do
    cmds[#cmds + 1] = string.format("(%s %s %s %d > %s 2>&1; echo $? > %s) &", env_args(env), sh_quote(H.cutelua()),
      sh_quote(script), i, sh_quote(dir .. "/out" .. i), sh_quote(dir .. "/rc" .. i))
  end
  H.sh(table.concat(cmds, " ") .. " wait")
  local outs, failed = {}, 0
  for i = 1, n do
    outs[i] = H.read(dir .. "/out" .. i) or ""
    if (H.read(dir .. "/rc" .. i) or ""):gsub("%s", "") ~= "0" then failed = failed + 1 end
  end
  return outs, failed
end

--- Captures the compiler's warnings while f runs; returns them.
function H.warnings(f)
  local compiler = require "cute.compiler"
  local got = {}
  local old = compiler.set_warning_handler(function(m) got[#got + 1] = m end)
  local ok, e = pcall(f)
  compiler.set_warning_handler(old)
  if not ok then error(e, 0) end
  return got
end

return H
