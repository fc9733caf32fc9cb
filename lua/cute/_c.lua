--- cute._c: the C core, seen through the FFI.
--
-- The host publishes one table of function pointers per C subsystem in
-- package.loaded["cute._capi"], with the C declarations (a .cdef file both
-- the C compiler and ffi.cdef read). `require("cute._c").host` declares and
-- casts the "host" table on first use. Lua never binds C symbols by name, so
-- this works in the cutelua executable, with libcutelua.so, and with
-- libcutelua.a linked into any program.
local ffi = require "ffi"

local M = {}

local ok, capi = pcall(require, "cute._capi")
if not ok then
  -- a Lua host that found cutelua's modules as files: libcutelua as the C
  -- module cute.capi (installed as lib/lua/5.1/cute/capi.so) sets it up
  local ok2, c2 = pcall(require, "cute.capi")
  if ok2 and type(c2) == "table" then
    capi = c2
  else
    error("cute._c: this Lua state was not set up by cutelua (no cute._capi table, and no C module cute.capi: "
      .. tostring(c2):gsub("\n.*", "") .. "); run it with the cutelua command, open it with "
      .. "cutelua_open()/cutelua_attach(), or install cutelua so that require \"cute.capi\" finds libcutelua", 0)
  end
end

setmetatable(M, {
  __index = function(t, name)
    local entry = capi[name]
    if not entry then
      error(string.format("cutelua's C subsystem '%s' is not part of this build", tostring(name)), 2)
    end
    ffi.cdef(entry.cdef)
    local api = ffi.cast("const " .. entry.ctype .. " *", entry.ptr)
    rawset(t, name, api)
    return api
  end,
})

--- True when the subsystem is built in.
function M.has(name) return capi[name] ~= nil end

return M
