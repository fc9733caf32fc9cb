--- cute.kernel's arguments: what each argument is (classify), the
-- specialisation's signature key, the kernel's parameters in the IR and
-- the trace-time values made from them (make_params), and the FFI struct one
-- launch packs its parameters into (make_packer). Used by kernel.lua (the
-- kernel object), kernel_trace.lua, kernel_cache.lua and kernel_launch.lua.
local ffi = require "ffi"
local core = require "cute.trace.core"
local ttensor = require "cute.trace.tensor"
local dtype = require "cute.dtype"
local err = require "cute._err"
local L = require "cute.layout"
local it = require "cute.int_tuple"

local A = {}

-- ---------------------------------------------------------------------------
-- Markers

local Constexpr = { __name = "constexpr" }
Constexpr.__tostring = function(c) return "constexpr(" .. tostring(c.value) .. ")" end
--- A compile-time argument (or, as an annotation, "this parameter is compile-time").
A.constexpr = setmetatable({}, {
  __call = function(_, v) return setmetatable({ value = v }, Constexpr) end,
  __tostring = function() return "cute.constexpr" end,
})

local StaticMark = { __name = "static" }
--- The tensor with its whole layout compile-time (specialised on every extent and stride).
-- @param t a device tensor (or fake tensor)
-- @return the tensor marked static, as a kernel argument
-- @usage k:compile(cute.static(cute.fake_tensor(cute.f32, {16, 16})))
function A.static(t) return setmetatable({ tensor = t }, StaticMark) end

-- ---------------------------------------------------------------------------
-- Arguments: kind and signature key

local function param_names(fn)
  local names = {}
  local i = 1
  while true do
    local n = debug.getlocal(fn, i)
    if not n then break end
    names[i] = n
    i = i + 1
  end
  return names
end

-- A deterministic string of a compile-time value, for the signature key.
local function serialize(v, depth)
  depth = depth or 0
  local t = type(v)
  if t == "number" then return string.format("%.17g", v) end
  if t == "string" then return string.format("%q", v) end
  if t == "boolean" or t == "nil" then return tostring(v) end
  if t == "table" then
    local mt = getmetatable(v)
    if mt and mt.__tostring then return "<" .. tostring(v) .. ">" end
    if depth > 8 then err.raise("cute.constexpr: a table nested too deeply for a signature") end
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    local parts = {}
    for _, k in ipairs(keys) do parts[#parts + 1] = serialize(k, depth + 1) .. "=" .. serialize(v[k], depth + 1) end
    return "{" .. table.concat(parts, ",") .. "}"
  end
  if t == "function" then
    -- functions are compared by identity: a new closure is a new signature
    return tostring(v)
  end
  err.raise("cute.constexpr: cannot use a %s as a compile-time value", t)
end

-- Leaves of an IntTuple in order, with a structure string where leaves are
-- replaced by what f returns.
local function map_leaves(x, f)
  if type(x) == "table" and it.is_tuple(x) then
    local parts = {}
    for i = 1, #x do parts[i] = map_leaves(x[i], f) end
    return "(" .. table.concat(parts, ",") .. ")"
  end
  return f(x)
end

local function leaves(x, out)
  out = out or {}
  if type(x) == "table" and it.is_tuple(x) then
    for i = 1, #x do leaves(x[i], out) end
  else
    out[#out + 1] = x
  end
  return out
end

-- Rebuilds a tuple of the same structure as x from a list of leaves.
local function rebuild(x, list, pos)
  if type(x) == "table" and it.is_tuple(x) then
    local out = {}
    for i = 1, #x do out[i], pos = rebuild(x[i], list, pos) end
    return out, pos
  end
  return list[pos], pos + 1
end

-- What a tensor argument contributes: the pointer, which leaves are run-time.
-- The key is cached on the tensor (tensors never change layout), so that the
-- launch path's guard compares one string per tensor.
local function tensor_spec(t, static_all)
  local layout = t.layout
  local field = static_all and "_sig_static" or "_sig"
  local cached = rawget(t, field)
  if cached then return cached end
  if not L.is_layout(layout) then
    err.raise("kernel arguments: tensors with composed (swizzled) layouts cannot be passed to kernels; pass the "
      .. "plain tensor")
  end
  local cosize = L.cosize(layout)
  local idx64 = cosize >= 2 ^ 31
  local skey = map_leaves(L.shape(layout), function(v) return static_all and tostring(v) or "?" end)
  -- run-time strides are specialised on the power of two dividing them (up to
  -- 16 elements): addresses computed from them keep a known alignment, so
  -- rows of a row-major matrix can be moved with 16-byte vectors
  local divs = {}
  local dkey = map_leaves(L.stride(layout), function(v)
    if static_all or v == 0 or v == 1 then return tostring(v) end
    local d = 0
    while d < 4 and v % (2 ^ (d + 1)) == 0 do d = d + 1 end
    divs[#divs + 1] = d
    return d > 0 and ("?" .. 2 ^ d) or "?"
  end)
  local align = t:alignment()
  local spec = {
    kind = "tensor", dtype = t.dtype, static = static_all, idx64 = idx64, align = align,
    key = string.format("T%s%s:%s:%s:a%d%s", t.dtype.name, static_all and "!" or "", skey, dkey, align,
      idx64 and ":64" or ""),
    layout = layout, stride_divs = divs,
  }
  rawset(t, field, spec)
  return spec
end

-- A TMA atom's static facts (what a trace reads of it: op, dtype, box,
-- swizzle, tile, boxes, dimension order), cached on the atom; its tensor's
-- address, dims and strides are the run-time descriptor bytes.
function A.tma_atom_key(a)
  local k = rawget(a, "_sig")
  if k then return k end
  local offs = {}
  for i, b in ipairs(a.boxes) do offs[i] = b.smem_offset end
  k = string.format("A%s:%s:%s:%s:%s:d%s:t%s:b%s:o%s:%s:%s", tostring(a), a.op.name, a.op.reduction or "",
    a.tma_dtype.name, tostring(a.smem_layout), table.concat(a.dim_modes, ","), table.concat(a.tile, ","),
    table.concat(a.box, ","), table.concat(offs, ","), tostring(a.l2), tostring(a.oob))
  rawset(a, "_sig", k)
  return k
end

-- An IntTuple argument (seed 003, CuTe's IntTuple parameters): a nested
-- Lua array whose leaves are numbers (static: baked into the kernel) or
-- integer typed scalars (cute.i32(n), cute.i64(n), ...: run-time, one kernel
-- parameter each). Its profile (structure, static values, the dtypes of the
-- run-time leaves) is its signature key: "I(?i32,(?i32,4))". Returns the
-- spec, or nil and why the table is not one.
local MAX_TUPLE_LEAVES = 64
local function tuple_spec(arg, what)
  local Scalar = dtype.Scalar
  local dyn, nleaves, paths = {}, 0, {}
  local function walk(x, path, depth)
    if depth > 8 then err.raise("%s: an IntTuple nested more than 8 deep", what) end
    if type(x) == "table" and getmetatable(x) ~= Scalar then
      if not it.is_tuple(x) then
        err.raise("%s: an IntTuple holds numbers, integer scalars (cute.i32(n)) and tuples, not %s", what, tostring(x))
      end
      local n = #x
      for k in pairs(x) do
        if type(k) ~= "number" or k < 1 or k > n or k ~= math.floor(k) then
          err.raise("%s: an IntTuple is an array; it has the key %s", what, tostring(k))
        end
      end
      if n == 0 then err.raise("%s: an empty IntTuple", what) end
      local parts = {}
      for j = 1, n do
        local sub = {}
        for q = 1, #path do sub[q] = path[q] end
        sub[#sub + 1] = j
        parts[j] = walk(x[j], sub, depth + 1)
      end
      return "(" .. table.concat(parts, ",") .. ")"
    end
    nleaves = nleaves + 1
    if nleaves > MAX_TUPLE_LEAVES then err.raise("%s: an IntTuple of more than %d leaves", what, MAX_TUPLE_LEAVES) end
    if type(x) == "number" then
      if x ~= math.floor(x) or x ~= x or math.abs(x) >= 2 ^ 53 then
        err.raise("%s: leaf %d of the IntTuple is %s, not an integer", what, nleaves, tostring(x))
      end
      return string.format("%d", x)
    end
    if getmetatable(x) == Scalar then
      local d = x.dtype
      if d.kind ~= "int" and d.kind ~= "uint" then
        err.raise("%s: leaf %d of the IntTuple is a %s; run-time leaves are integers (cute.i32(n), cute.i64(n))",
          what, nleaves, tostring(x))
      end
      dyn[#dyn + 1] = { leaf = nleaves, dtype = d }
      paths[nleaves] = path
      return "?" .. d.name
    end
    err.raise("%s: leaf %d of the IntTuple is a %s (%s); leaves are numbers (static) or integer scalars such as "
      .. "cute.i32(n) (run-time)", what, nleaves, type(x), tostring(x))
  end
  local profile = walk(arg, {}, 0)
  return { kind = "tuple", profile = profile, key = "I" .. profile, dyn = dyn, paths = paths, nleaves = nleaves,
    value = arg }
end

-- The profile of an IntTuple kernel argument: its structure, static values
-- and the dtypes of its run-time leaves, as a string ("(?i32,(?i32,4))").
function A.tuple_profile(t, what) return tuple_spec(t, what or "IntTuple").profile end

local function classify(arg, ann, name, i)
  local what = string.format("argument %s (#%d)", name and ("'" .. name .. "'") or "", i)
  local mt = type(arg) == "table" and getmetatable(arg)
  if ann == A.constexpr or mt == Constexpr then
    local v = arg -- (not `mt == Constexpr and arg.value or arg`: the value may be false)
    if mt == Constexpr then v = arg.value end
    return { kind = "const", value = v, key = "C" .. serialize(v) }
  end
  if mt == StaticMark then return tensor_spec(arg.tensor, true) end
  if mt == require("cute.tensor").DeviceTensor then return tensor_spec(arg, false) end
  if mt == dtype.Scalar then
    return { kind = "scalar", dtype = arg.dtype, key = "S" .. arg.dtype.name }
  end
  if type(arg) == "number" then
    if dtype.is_dtype(ann) then
      dtype.check_value(ann, arg, what .. " (" .. ann.name .. ")")
      return { kind = "scalar", dtype = ann, key = "S" .. ann.name, plain = true }
    end
    err.raise("%s is a Lua number: say how the kernel takes it, e.g. cute.i32(%s) or cute.f32(%s) at the call, "
      .. "cute.constexpr(%s) for a compile-time value, or annotate the parameter: cute.kernel(fn, {params = "
      .. "{%s = cute.i32}})", what, tostring(arg), tostring(arg), tostring(arg), name or "name")
  end
  if type(arg) == "boolean" or type(arg) == "string" then
    return { kind = "const", value = arg, key = "C" .. serialize(arg) }
  end
  if type(arg) == "table" and it.is_tuple(arg) then return tuple_spec(arg, what) end
  if type(arg) == "cdata" and ffi.istype("CuteTmaDesc", arg) then return { kind = "tma", key = "M" } end
  if require("cute.nvgpu.tma").is_tma_atom(arg) then
    return { kind = "tma_atom", atom = arg, key = A.tma_atom_key(arg) }
  end
  if ann ~= nil and ann ~= A.constexpr and not dtype.is_dtype(ann) then
    err.raise("%s: unknown annotation %s (use a dtype or cute.constexpr)", what, tostring(ann))
  end
  err.raise("%s: a kernel cannot take a %s (%s); pass device tensors, typed scalars (cute.i32(n)), "
    .. "IntTuples ({cute.i32(m), 4}), compile-time values (cute.constexpr(v)), TMA atoms or TMA descriptors", what,
    type(arg), tostring(arg))
end

-- ---------------------------------------------------------------------------
-- The kernel's parameters and the launch's struct

-- Makes the kernel's parameters in the IR and the trace-time arguments; fills
-- spec.params: the C type of each launch parameter, in order.
local function make_params(trace, specs, names, checked)
  local ir = core.ir()
  local args, params = {}, {}
  local tensors = {}
  for i, s in ipairs(specs) do
    if s.kind == "const" then
      args[i] = s.value
    elseif s.kind == "scalar" then
      local t = core.scalar(s.dtype)
      args[i] = core.value(ir.param(trace.f, core.irtype(t)), t)
      params[#params + 1] = { ctype = s.dtype.storage, arg = i, what = "value", dtype = s.dtype }
    elseif s.kind == "tuple" then
      -- run-time leaves are parameters; static ones stay numbers (the layout algebra folds them)
      local j = 0
      local function build(x)
        if type(x) == "table" and getmetatable(x) ~= dtype.Scalar then
          local out = {}
          for q = 1, #x do out[q] = build(x[q]) end
          return it.internal.tup(out)
        end
        j = j + 1
        if type(x) == "number" then return x end
        local t = core.scalar(x.dtype)
        params[#params + 1] = { ctype = x.dtype.storage, arg = i, what = "tuple", leaf = j, dtype = x.dtype }
        return core.value(ir.param(trace.f, core.irtype(t)), t)
      end
      args[i] = it.internal.tup(build(s.value))
    elseif s.kind == "tma" then
      local ref = ir.param_blob(trace.f, 128, 64)
      args[i] = { tma = true, ptr = core.value(ref, core.ptr(core.scalar(dtype.u8), "param", 64)) }
      params[#params + 1] = { ctype = "CuteTmaDesc", arg = i, what = "tma" }
    elseif s.kind == "tma_atom" then
      -- the atom in the kernel: the same facts, its descriptor a grid-constant parameter
      local ref = ir.param_blob(trace.f, 128, 64)
      local a = {}
      for k, v in pairs(s.atom) do a[k] = v end
      a._desc = core.value(ref, core.ptr(core.scalar(dtype.u8), "param", 64))
      args[i] = setmetatable(a, getmetatable(s.atom))
      params[#params + 1] = { ctype = "CuteTmaDesc", arg = i, what = "tma_atom" }
    else -- tensor
      local pt = core.ptr(core.scalar(s.dtype), "global", math.max(s.align, s.dtype.bytes))
      local p = core.value(ir.param(trace.f, core.irtype(pt)), pt)
      params[#params + 1] = { ctype = "uint64_t", arg = i, what = "ptr" }
      local layout = s.layout
      local layout_t
      if s.static then
        layout_t = layout
      else
        local it_t = s.idx64 and core.i64 or core.i32
        local ctype = s.idx64 and "int64_t" or "int32_t"
        local sl, dl = leaves(L.shape(layout)), leaves(L.stride(layout))
        local shape_v, stride_v = {}, {}
        for j = 1, #sl do
          shape_v[j] = core.value(ir.param(trace.f, core.irtype(it_t)), it_t)
          params[#params + 1] = { ctype = ctype, arg = i, what = "shape", leaf = j }
        end
        local dyn = 0
        for j = 1, #dl do
          if dl[j] == 0 or dl[j] == 1 then
            stride_v[j] = dl[j]
          else
            dyn = dyn + 1
            stride_v[j] = core.value(ir.param(trace.f, core.irtype(it_t)), it_t, s.stride_divs[dyn])
            params[#params + 1] = { ctype = ctype, arg = i, what = "stride", leaf = j }
          end
        end
        local shape = type(L.shape(layout)) == "table" and rebuild(L.shape(layout), shape_v, 1) or shape_v[1]
        local stride = type(L.stride(layout)) == "table" and rebuild(L.stride(layout), stride_v, 1) or stride_v[1]
        layout_t = L.make_layout(shape, stride)
      end
      args[i] = ttensor.make_tensor(p, layout_t, s.dtype)
      -- named as the user named the parameter, in error messages (with the argument's shape)
      if names[i] and names[i] ~= "..." then
        rawset(args[i], "name", names[i])
        rawset(args[i], "arg_shape", L.shape(layout))
      end
      tensors[#tensors + 1] = { arg = i, ptr = p, name = names[i] or ("#" .. i) }
    end
  end
  if checked then
    for _, p in ipairs(require("cute.trace.check").setup(trace, tensors)) do params[#params + 1] = p end
  end
  return args, params
end

-- The FFI struct that holds one launch's parameters, and the void*[] into it.
local pack_serial = 0
local function make_packer(params)
  pack_serial = pack_serial + 1
  local fields = {}
  for j, p in ipairs(params) do fields[j] = string.format("%s p%d;", p.ctype, j) end
  local name = "CutePack" .. pack_serial
  ffi.cdef(string.format("typedef struct %s { %s } %s;", name, table.concat(fields, " "), name))
  local storage = ffi.new(name)
  local argv = ffi.new("void *[?]", math.max(#params, 1))
  for j = 1, #params do argv[j - 1] = ffi.cast("void *", ffi.cast("char *", storage) + ffi.offsetof(name, "p" .. j)) end
  return storage, argv
end

local function signature(k, n, ...)
  if n > #k.names and not k.vararg then
    err.raise("kernel %s takes %d argument%s (%s), got %d", k.name, #k.names, #k.names == 1 and "" or "s",
      table.concat(k.names, ", "), n)
  end
  local specs, keys = {}, {}
  for i = 1, n do
    local s = classify((select(i, ...)), k.ann[i], k.names[i], i)
    specs[i] = s
    keys[i] = s.key
  end
  return specs, table.concat(keys, "|")
end

A.Constexpr, A.StaticMark = Constexpr, StaticMark
A.param_names, A.serialize, A.tensor_spec, A.classify, A.signature = param_names, serialize, tensor_spec, classify,
  signature
A.make_params, A.make_packer = make_params, make_packer

return A
