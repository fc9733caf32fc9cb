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
  error("cute._c: this Lua state was not set up by cutelua (no cute._capi table); "
    .. "run it with the cutelua command or open it with cutelua_open()/cutelua_attach()", 0)
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
