-- cute.aot.load given what is not an intact exported library: a missing
-- path, a file that is no ELF, a library dlopen refuses, an entry that
-- returns no descriptor, truncated and bit-flipped copies of an export. Each
-- must fail with a message naming the file; none may crash the process. The
-- loads run in a child cutelua (a crash there fails the spec instead of
-- killing busted), with the driver stub in its library path where this
-- machine has no driver, so that dlopen gets as far as it can.
-- CUTELUA_FUZZ_LONG=1 runs 20x more mutations.
local cute = require "cute"
local aot = require "cute.aot"
local K = require "tests.aot.kernels"

local function tmpdir()
  local d = os.tmpname()
  os.remove(d)
  os.execute("mkdir -p " .. d)
  return d
end

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

local function write(path, s)
  local f = assert(io.open(path, "wb"))
  f:write(s)
  f:close()
end

local function sh(cmd)
  local h = io.popen(cmd .. " 2>&1; echo \"rc=$?\"")
  local out = h:read("*a")
  h:close()
  return out, tonumber(out:match("rc=(%d+)\n$"))
end

local bin = (os.getenv("CUTELUA_BIN") or "build") .. "/cutelua"

-- The library path a child needs for dlopen to find libcuda.so.1.
local function driver_env(dir)
  if cute.libraries().cuda.ok then return "" end
  local home = require("cute._c").host.cuda_home()
  os.execute(string.format("mkdir -p %s/stub && ln -sf %s/lib64/stubs/libcuda.so %s/stub/libcuda.so.1", dir,
    require("ffi").string(home), dir))
  return "LD_LIBRARY_PATH=" .. dir .. "/stub "
end

-- Loads each path in one child process: "case i: ok" or "case i: err <message>".
local function load_all(dir, paths)
  local script = dir .. "/load_all.lua"
  write(script, [[
local aot = require "cute.aot"
for i = 1, #arg do
  local ok, e = pcall(aot.load, arg[i])
  io.write(string.format("case %d: %s\n", i, ok and "ok" or ("err " .. tostring(e):gsub("\n", " | "))))
  io.flush()
end
print("all done")
]])
  local quoted = {}
  for i, p in ipairs(paths) do quoted[i] = "'" .. p .. "'" end
  local out, rc = sh(driver_env(dir) .. bin .. " " .. script .. " " .. table.concat(quoted, " "))
  local results = {}
  for i, what in out:gmatch("case (%d+): ([^\n]*)") do results[tonumber(i)] = what end
  return results, out, rc
end

describe("cute.aot.load refuses what is not an intact export", function()
  local dir, so, good

  setup(function()
    dir = tmpdir()
    local p = cute.export { name = "mod_a", prefix = "ma", dir = dir, arch = { "sm_80" }, shared = true,
      kernels = K.entries() }
    so = p.shared
    good = read(so)
  end)

  teardown(function() os.execute("rm -rf " .. dir) end)

  it("says why, for a missing file, a text file, a library dlopen refuses and one with no descriptor", function()
    write(dir .. "/text.so", "not a library at all\n")
    -- sealed libraries made here: one dlopen refuses (an undefined symbol), one whose entry returns NULL
    write(dir .. "/undef.c", "extern int no_such_symbol_xyz;\nint f(void);\n"
      .. "int f(void) { return no_such_symbol_xyz; }\n")
    write(dir .. "/null.c", "const void *cutelua_aot_entry(void);\n"
      .. "const void *cutelua_aot_entry(void) { return 0; }\n")
    local cc = os.getenv("CC") or "cc"
    local out, rc = sh(string.format("%s -shared -fPIC -o %s/undef.so %s/undef.c && "
      .. "%s -shared -fPIC -o %s/null.so %s/null.c", cc, dir, dir, cc, dir, dir))
    assert.equal(0, rc, out)
    aot._seal(dir .. "/undef.so")
    aot._seal(dir .. "/null.so")
    local function q(s) return (s:gsub("%p", "%%%0")) end
    -- each message starts at the caller's line (load_all.lua:3)
    local cases = {
      { "/nonexistent/mod.so", q "cannot read /nonexistent/mod.so: No such file or directory" },
      { dir .. "/text.so", q(dir .. "/text.so is not a loadable shared library: not an ELF file") },
      { dir, q(dir .. " is a directory, not a regular file") },
      { dir .. "/undef.so", q("cannot load " .. dir .. "/undef.so: ") .. ".*undefined symbol: no_such_symbol_xyz" },
      { dir .. "/null.so", q(dir .. "/null.so: its cutelua_aot_entry returned no descriptor") },
    }
    local paths = {}
    for i, c in ipairs(cases) do paths[i] = c[1] end
    local results, all, code = load_all(dir, paths)
    assert.equal(0, code, all)
    for i, c in ipairs(cases) do
      assert.is_truthy(results[i], all)
      assert.matches("^err [^ ]*load_all%.lua:3: cute%.aot%.load: " .. c[2], results[i])
    end
    -- and the check alone, in this process
    local ok, why = aot.check_file(dir .. "/text.so")
    assert.is_false(ok)
    assert.matches("not an ELF file", why)
    assert.is_true((aot.check_file(so)))
    assert.has_error(function() aot.load(42) end, "cute.aot.load: expected the path of an exported library, got number")
  end)

  it("refuses truncated and bit-flipped copies of an export before dlopen", function()
    local long = os.getenv("CUTELUA_FUZZ_LONG") == "1"
    local n = long and 800 or 40
    local paths, seed = {}, 12345
    local function rand(m) -- a small LCG: the same cases every run
      seed = (seed * 1103515245 + 12345) % 2147483648
      return seed % m
    end
    for i = 1, n do
      local s
      if i % 2 == 1 then
        s = good:sub(1, rand(#good)) -- a truncation
      else
        local at = rand(#good) + 1
        local b = good:byte(at)
        s = good:sub(1, at - 1) .. string.char(bit.bxor(b, bit.lshift(1, rand(8)))) .. good:sub(at + 1)
      end
      paths[i] = string.format("%s/mut%d.so", dir, i)
      write(paths[i], s)
    end
    paths[#paths + 1] = so -- the export itself: loads (GPU), or passes every check and stops at the driver
    local results, all, code = load_all(dir, paths)
    assert.equal(0, code, all)
    assert.matches("all done\n", all)
    for i = 1, n do
      assert.matches("^err [^ ]*load_all%.lua:3: cute%.aot%.load: " .. paths[i]:gsub("%p", "%%%0") .. " ",
        results[i] or "(none)")
    end
    local last = results[#paths]
    -- (a GPU the export has no cubin for also means every file check passed)
    assert(last == "ok" or last:match("cuInit failed") or last:match("no CUDA context")
      or last:match("no cubin of kernel [%w_]+ for this GPU"), last)
  end)
end)
