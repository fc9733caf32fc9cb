--- cute.kernel's launch path: per specialisation a generated guard (do
-- these arguments fit it?) and packer (write them into its parameter
-- struct), the loaded kernel function per device, and the checked launch's
-- record buffer and report (an out-of-bounds access or a failed assertion
-- raised at the user's line). Kernel:launch (kernel.lua) strings them
-- together in one LuaJIT trace.
local ffi = require "ffi"
local dtype = require "cute.dtype"
local runtime = require "cute.runtime"
local err = require "cute._err"
local L = require "cute.layout"
local args = require "cute.kernel_args"

local LA = {}
local Constexpr, StaticMark, tensor_spec = args.Constexpr, args.StaticMark, args.tensor_spec

-- The loaded kernel function of a specialisation on the current device
-- (loaded again after a device reset).
local function kernel_fn(k, spec)
  local dev = runtime.current_device()
  local gen = runtime.generation(dev)
  local l = spec.loaded[dev]
  if l and l.gen == gen then return l.fn end
  local mod = runtime.load_module(spec.compiled:cubin(), k.name)
  local kfn = mod:kernel(k.name)
  spec.loaded[dev] = { gen = gen, fn = kfn, module = mod }
  return kfn
end

-- ---------------------------------------------------------------------------
-- The launch path. Each specialisation gets two generated functions: a guard
-- (do these arguments fit it? same layout objects, dtypes, sufficient
-- alignment, the same compile-time values) and a packer (write the arguments
-- into its parameter struct). A kernel remembers its last specialisation, so a
-- repeated launch costs the guard, the packing and cuLaunchKernel.

local rt = require("cute._c").rt
local Scalar = dtype.Scalar

local function narrow_float(dt)
  return dt.is_float and (dt.storage == "uint16_t" or dt.storage == "uint8_t")
end

-- Encodes a number as the storage of a narrow float dtype (f16, bf16, fp8).
local conv_in, conv_out = ffi.new("double[1]"), ffi.new("uint64_t[1]")
local function encode_narrow(code, v)
  conv_in[0] = v
  rt.from_doubles(conv_out, code, conv_in, 1)
  return conv_out[0]
end

-- A checked kernel's bound for a tensor argument: the bytes its layout spans
-- (cosize), or fewer if its buffer ends before.
local function tensor_limit(t)
  local l = rawget(t, "_lim")
  if l then return l end
  l = L.cosize(t.layout) * t.dtype.bytes
  if t.buffer then
    local room = tonumber(t.buffer.bytes) - t.offset
    if room < l then l = room end
  end
  t._lim = l
  return l
end

-- A TMA atom argument's descriptor, encoded once from the tensor the atom
-- was made from (TmaAtom:descriptor; the tensor's rules were checked when
-- the atom was made) and kept on the atom.
local function tma_atom_desc(a)
  local d = rawget(a, "_descv")
  if d then return d end
  if a.tensor == nil then
    err.raise("kernel launch: the TMA atom was made from a fake tensor; make it from the tensor the kernel reads "
      .. "or writes (make_tiled_tma_atom(op, tensor, ...)) to launch")
  end
  d = a:descriptor()
  rawset(a, "_descv", d)
  return d
end

function LA.codegen(spec, arguments)
  local DeviceTensor = require("cute.tensor").DeviceTensor
  local env = { DT = DeviceTensor, SC = Scalar, CE = Constexpr, SM = StaticMark, ffi = ffi, enc = encode_narrow,
    getmetatable = getmetatable, rawequal = rawequal, rawget = rawget, type = type, sig = tensor_spec,
    lim = tensor_limit, CK = spec.check, fits = dtype.fits, asig = args.tma_atom_key, adesc = tma_atom_desc,
    TA = require("cute.nvgpu.tma").is_tma_atom }
  local n = #spec.specs
  local names = {}
  for i = 1, n do names[i] = "a" .. i end
  local conds = { "n == " .. n }
  for i, s in ipairs(spec.specs) do
    local a, arg = names[i], arguments[i]
    if s.kind == "tensor" then
      local static = getmetatable(arg) == StaticMark
      env["K" .. i] = s.key
      local src = static and (a .. ".tensor") or a
      if static then conds[#conds + 1] = string.format("getmetatable(%s) == SM", a) end
      -- the signature cached on the tensor (tensor_spec), or computed now for a new tensor
      conds[#conds + 1] = string.format("getmetatable(%s) == DT and (rawget(%s, '%s') or sig(%s, %s)).key == K%d",
        src, src, static and "_sig_static" or "_sig", src, tostring(static), i)
    elseif s.kind == "scalar" then
      env["D" .. i] = s.dtype
      if s.plain then -- a number the dtype holds (else the signature's classify says why not)
        conds[#conds + 1] = string.format("type(%s) == 'number' and fits(D%d, %s)", a, i, a)
      else
        conds[#conds + 1] = string.format("getmetatable(%s) == SC and %s.dtype == D%d", a, a, i)
      end
    elseif s.kind == "const" then
      env["V" .. i] = s.value
      if getmetatable(arg) == Constexpr then
        conds[#conds + 1] = string.format("getmetatable(%s) == CE and rawequal(%s.value, V%d)", a, a, i)
      else
        conds[#conds + 1] = string.format("rawequal(%s, V%d)", a, i)
      end
    elseif s.kind == "tuple" then
      -- the profile, checked in line: structure, static values, the run-time leaves' dtypes
      env.TT = require("cute.int_tuple").internal.TUPLE
      local function cond(x, path)
        if type(x) == "table" and getmetatable(x) ~= Scalar then
          conds[#conds + 1] = string.format("type(%s) == 'table' and (getmetatable(%s) == nil or "
            .. "getmetatable(%s) == TT) and #%s == %d", path, path, path, path, #x)
          for q = 1, #x do cond(x[q], string.format("%s[%d]", path, q)) end
        elseif type(x) == "number" then
          conds[#conds + 1] = string.format("%s == %d", path, x)
        else
          local dn = "D" .. i .. "_" .. (#conds + 1)
          env[dn] = x.dtype
          conds[#conds + 1] = string.format("getmetatable(%s) == SC and %s.dtype == %s", path, path, dn)
        end
      end
      cond(arg, a)
    elseif s.kind == "tma_atom" then
      env["K" .. i] = s.key
      conds[#conds + 1] = string.format("TA(%s) and (rawget(%s, '_sig') or asig(%s)) == K%d", a, a, a, i)
    else -- tma
      conds[#conds + 1] = string.format("ffi.istype('CuteTmaDesc', %s)", a)
    end
  end
  local stmts = {}
  for j, p in ipairs(spec.params) do
    local a = names[p.arg]
    local t = getmetatable(arguments[p.arg]) == StaticMark and (a .. ".tensor") or a
    local rhs
    if p.what == "value" then
      local v = spec.specs[p.arg].plain and a or (a .. ".value")
      if narrow_float(p.dtype) then
        rhs = string.format("enc(%d, %s)", p.dtype.code, v)
      elseif p.dtype.name == "bool" then
        rhs = string.format("(%s == true or %s == 1) and 1 or 0", v, v)
      else
        rhs = v
      end
    elseif p.what == "ptr" then
      rhs = t .. "._ptr"
    elseif p.what == "tuple" then
      local path = spec.specs[p.arg].paths[p.leaf]
      local idx = {}
      for q = 1, #path do idx[q] = string.format("[%d]", path[q]) end
      rhs = a .. table.concat(idx) .. ".value"
    elseif p.what == "tma" then
      rhs = a
    elseif p.what == "tma_atom" then
      rhs = string.format("adesc(%s)", a)
    elseif p.what == "check_lim" then
      rhs = string.format("lim(%s)", t)
    elseif p.what == "check_err" then
      rhs = "CK.ptr"
    elseif p.what == "shape" then
      rhs = string.format("%s._sl[%d]", t, p.leaf)
    else
      rhs = string.format("%s._dl[%d]", t, p.leaf)
    end
    stmts[#stmts + 1] = string.format("  st.p%d = %s", j, rhs)
  end
  local arglist = table.concat(names, ", ")
  local code = string.format([[
local DT, SC, CE, SM, ffi, enc, getmetatable, rawequal, rawget, type, sig, lim, CK, fits, asig, adesc, TA, TT =
  DT, SC, CE, SM, ffi, enc, getmetatable, rawequal, rawget, type, sig, lim, CK, fits, asig, adesc, TA, TT
local guard = function(n%s%s)
  return %s
end
local pack = function(st%s%s)
%s
end
return guard, pack]], n > 0 and ", " or "", arglist, table.concat(conds, "\n    and "), n > 0 and ", " or "", arglist,
    table.concat(stmts, "\n"))
  local chunk = assert(loadstring(code, "=(kernel launch " .. spec.key .. ")"))
  setfenv(chunk, env)
  return chunk()
end

-- The loaded kernel function of a specialisation on the current device.
local function loaded_fn(k, spec)
  local dev = runtime.current_device()
  local gen = rt.generation(dev)
  if spec.fn and spec.fn_dev == dev and spec.fn_gen == gen then return spec.fn end
  local kf = kernel_fn(k, spec)
  spec.fn, spec.fn_dev, spec.fn_gen = kf.fn, dev, gen
  return spec.fn
end

local launch_cfg = ffi.new("RtLaunch")

-- Checked launches: a record buffer per device (cute.trace.check describes
-- it), cleared before each launch and read after it.
local check_bufs = {}
local function check_buffer()
  local dev = runtime.current_device()
  local gen = rt.generation(dev)
  local b = check_bufs[dev]
  if not b or b.gen ~= gen then
    b = { gen = gen, buf = runtime.alloc(require("cute.trace.check").RECORD_BYTES), host = ffi.new("int32_t[16]") }
    check_bufs[dev] = b
  end
  return b
end

local function b_clear(b, cfg) b.buf:memset(0, 4, 16, 0, cfg.stream) end

local function dims(h, i) return string.format("(%d,%d,%d)", h[i], h[i + 1], h[i + 2]) end

-- Waits for a checked launch and raises what its record says.
local function check_result(k, spec, cfg, b)
  if cfg.stream then cfg.stream:synchronize() else runtime.synchronize() end
  local h = b.host
  b.buf:copy_to_host(h, 64, 0)
  if h[0] == 0 then return end
  local site = spec.check_sites[h[2]] or { what = "access", where = "?" }
  local count = h[1] % 2 ^ 32
  local msg
  if site.what == "assert" then
    msg = string.format("kernel '%s': cute.assert_ failed at %s%s, in block %s thread %s", k.name, site.where,
      site.msg and (": " .. tostring(site.msg)) or "", dims(h, 3), dims(h, 6))
    if count > 1 then msg = msg .. string.format(" (%d failures in all; the first is shown)", count) end
  else
    local off = h[10] * 2 ^ 32 + h[9] % 2 ^ 32
    local lim = h[12] * 2 ^ 32 + h[11] % 2 ^ 32
    msg = string.format("kernel '%s': out-of-bounds %s of %d bytes at %s, in block %s thread %s: byte offset %d of "
      .. "%s, which has %d bytes", k.name, site.what, site.bytes, site.where, dims(h, 3), dims(h, 6), off, site.name,
      lim)
    if count > 1 then msg = msg .. string.format(" (%d out-of-bounds accesses in all; the first is shown)", count) end
    msg = msg .. ". Checked launch: the access was not made, and the GPU stays usable"
  end
  err.raise("%s", msg)
end

LA.loaded_fn, LA.launch_cfg, LA.check_buffer, LA.b_clear, LA.check_result = loaded_fn, launch_cfg, check_buffer,
  b_clear, check_result
return LA
