-- Dumps: CUTELUA_KEEP and CUTELUA_DUMP_DIR write each stage to
-- <dir>/<kernel>.<arch>.<stage>; Module:dump does the same on request.
local compiler = require "cute.compiler"
local H = require "tests.spec.compiler.helper"

local function cwd() return (H.sh("pwd")):gsub("%s+$", "") end

describe("dumps", function()
  local dir
  before_each(function() dir = H.tmpdir() end)
  after_each(function() H.rm(dir) end)

  it("follow CUTELUA_KEEP into CUTELUA_DUMP_DIR", function()
    local code = ([[
      local compiler = require "cute.compiler"
      compiler.set_warning_handler(function(w) print("warning=" .. w) end)
      local text = io.open("%s/tests/data/nvvm/saxpy.ll"):read("*a")
      local m = compiler.compile(text, { arch = "sm_80" }, { ir = "printed IR of saxpy\n" })
      assert(m.name == "saxpy")
    ]]):format(cwd())
    local out, rc = H.run(code, { CUTELUA_KEEP = "ir,ll,ptx,cubin,log", CUTELUA_DUMP_DIR = dir .. "/dumps",
      CUTELUA_CACHE = "0" }, dir)
    assert.equal(0, rc, out)
    assert.equal("printed IR of saxpy\n", H.read(dir .. "/dumps/saxpy.sm_80.ir"))
    assert.equal(H.data("saxpy.ll"), H.read(dir .. "/dumps/saxpy.sm_80.ll"))
    local ptx = H.read(dir .. "/dumps/saxpy.sm_80.ptx")
    assert.matches("%.visible %.entry saxpy%(", ptx)
    assert.equal("\127ELF", H.read(dir .. "/dumps/saxpy.sm_80.cubin"):sub(1, 4))
    assert.matches("Compiling entry function 'saxpy' for 'sm_80'", H.read(dir .. "/dumps/saxpy.sm_80.log"))
    assert.is_nil(H.read(dir .. "/dumps/saxpy.sm_80.sass"))
    assert.is_nil(out:find("warning=", 1, true))
  end)

  it("dump from a cache hit too, and skip with a note what the hit lacks", function()
    local code = ([[
      local compiler = require "cute.compiler"
      compiler.set_warning_handler(function(w) print("warning=" .. w) end)
      local text = io.open("%s/tests/data/nvvm/add_one.ptx"):read("*a")
      local m = compiler.compile(text, { arch = "sm_90a" })
      print("origin=" .. m.origin)
    ]]):format(cwd())
    local env = { CUTELUA_KEEP = "ll,ptx,cubin", CUTELUA_DUMP_DIR = dir, CUTELUA_CACHE_DIR = dir .. "/cache" }
    H.run(code, env, dir)
    os.remove(dir .. "/add_one.sm_90a.cubin")
    local out = H.run(code, env, dir)
    assert.matches("origin=disk", out)
    assert.equal("\127ELF", H.read(dir .. "/add_one.sm_90a.cubin"):sub(1, 4))
    assert.matches("warning=ll not dumped: this compile does not have it", out)
  end)

  it("are written on request by Module:dump", function()
    local m = compiler.compile(H.data("mma.ll"), { arch = "sm_90a", cache = false, keep = "" })
    local paths = m:dump("ptx,cubin", dir)
    assert.same({ dir .. "/mma_tile.sm_90a.ptx", dir .. "/mma_tile.sm_90a.cubin" }, paths)
    assert.equal(m:ptx(), H.read(paths[1]))
    assert.equal(m:cubin(), H.read(paths[2]))
    assert.error_matches(function() m:dump("ptx", "/proc/cutelua-nope") end,
      "cannot create the dump directory /proc/cutelua%-nope")
  end)

  it("include SASS where a disassembler exists, and say so where none does", function()
    local m = compiler.compile(H.data("saxpy.ll"), { arch = "sm_90a", cache = false, keep = "" })
    local has_tool = pcall(m.sass, m)
    local warnings = H.warnings(function() m:dump("sass", dir) end)
    if has_tool then
      assert.equal(m:sass(), H.read(dir .. "/saxpy.sm_90a.sass"))
    else
      assert.is_nil(H.read(dir .. "/saxpy.sm_90a.sass"))
      assert.equal(1, #warnings)
      assert.matches("^sass not dumped: SASS needs nvdisasm or cuobjdump", warnings[1])
      -- a stand-in disassembler on PATH shows the plumbing end to end
      H.write(dir .. "/nvdisasm", "#!/bin/sh\necho \"SASS of $(wc -c < \"$2\") bytes ($1)\"\n")
      H.sh("chmod +x " .. H.quote(dir .. "/nvdisasm"))
      local out, rc = H.run(([[
        local m = require("cute.compiler").compile(io.open("%s/tests/data/nvvm/saxpy.ll"):read("*a"),
          { arch = "sm_90a", cache = false, keep = "sass" })
        io.write(m:sass())
      ]]):format(cwd()), { PATH = os.getenv("PATH") .. ":" .. dir, CUTELUA_DUMP_DIR = dir }, dir)
      assert.equal(0, rc, out)
      assert.equal(out, H.read(dir .. "/saxpy.sm_90a.sass"))
      assert.equal("SASS of " .. #m:cubin() .. " bytes (-c)\n", out)
    end
  end)
end)
