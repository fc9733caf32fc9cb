-- IR goldens: each tests/golden/ir/<name>.lua builds a module; its printed IR
-- and emitted NVVM IR must equal <name>.ir and <name>.ll kept next to it, and
-- the NVVM IR must compile through libnvvm and nvJitLink to a cubin for every
-- arch the golden lists, with the PTX instructions it lists present.
-- CUTELUA_UPDATE_GOLDEN=1 rewrites the expected files (then review the diff).
local ffi = require "ffi"
local ir = require "cute.ir"
local nv = require("cute._c").nvvm

local DIR = "tests/golden/ir/"
local UPDATE = os.getenv("CUTELUA_UPDATE_GOLDEN") == "1"

local function read(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end

local function write(path, s)
  local f = assert(io.open(path, "wb"))
  f:write(s)
  f:close()
end

local function goldens()
  local names = {}
  local p = io.popen("ls " .. DIR)
  for line in p:lines() do
    local n = line:match("^(.-)%.lua$")
    if n then names[#names + 1] = n end
  end
  p:close()
  table.sort(names)
  return names
end

-- NVVM IR -> PTX -> cubin for arch, through the nvvm driver (no cache).
local function compile(ll, arch, lineinfo)
  local o = ffi.new("NvOptions")
  nv.options_default(o)
  assert(nv.options_set_arch(o, arch) == 0, arch)
  o.lineinfo = lineinfo and 1 or 0
  o.cache = 0
  o.cache_dir[0] = 0
  o.keep = 0
  local r = nv.result_new()
  local rc = nv.compile(r, ll, #ll, 1, o)
  local function part(name)
    local len = ffi.new("size_t[1]")
    local s = nv.part(r, nv.part_find(name), len)
    return s ~= nil and ffi.string(s, len[0]) or ""
  end
  local out = { ok = rc == 0, ptx = part("ptx"), cubin = part("cubin"), diag = part("diag") }
  nv.result_free(r)
  return out
end

-- The same text, or the first differing line of each.
local function same(got, want, what)
  if got == want then return end
  local gl, wl, n = {}, {}, 0
  for l in (got .. "\n"):gmatch("(.-)\n") do gl[#gl + 1] = l end
  for l in (want .. "\n"):gmatch("(.-)\n") do wl[#wl + 1] = l end
  repeat n = n + 1 until gl[n] ~= wl[n]
  error(string.format("%s differs at line %d:\n  got:  %s\n  want: %s", what, n, tostring(gl[n]), tostring(wl[n])), 2)
end

describe("IR goldens", function()
  for _, name in ipairs(goldens()) do
    local spec = dofile(DIR .. name .. ".lua")
    it(name .. ": printed IR and NVVM IR match, and compile", function()
      local m = ir.module { sm = spec.sm or 80 }
      spec.build(ir, m)
      m:verify()
      local text = m:print { locs = spec.locs }
      local ll = m:emit_nvvm(spec.emit or {})
      if UPDATE then
        write(DIR .. name .. ".ir", text)
        write(DIR .. name .. ".ll", ll)
      end
      same(text, read(DIR .. name .. ".ir") or "(missing)", name .. ".ir")
      same(ll, read(DIR .. name .. ".ll") or "(missing)", name .. ".ll")
      for _, arch in ipairs(spec.archs or { "sm_80", "sm_90a" }) do
        local r = compile(ll, arch, (spec.emit or {}).line_info)
        assert(r.ok, name .. " for " .. arch .. ":\n" .. r.diag)
        assert.is_true(#r.cubin > 0)
        for _, want in ipairs(spec.ptx or {}) do
          assert(r.ptx:find(want, 1, true), name .. " for " .. arch .. ": the PTX has no '" .. want .. "'")
        end
        for _, absent in ipairs(spec.no_ptx or {}) do
          assert(not r.ptx:find(absent, 1, true), name .. " for " .. arch .. ": the PTX has '" .. absent .. "'")
        end
      end
      m:free()
    end)
  end
end)
