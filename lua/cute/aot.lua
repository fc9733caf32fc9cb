--- cute.aot: kernels exported ahead of time as a C header and an object
-- file (and a shared library), and exported modules loaded back into Lua.
--
--   cute.export {
--     name = "vadd", dir = "out", prefix = "vadd", arch = { "sm_80", "sm_90a" }, shared = true,
--     kernels = {
--       { name = "vadd_f32", kernel = vadd, args = { cute.fake_tensor(cute.f32, 1024), ... },
--         grid = function(a, b, c) return cute.ceil_div(cute.size(c), 256) end, block = 256 },
--     },
--   }
--   --> out/vadd.h, out/vadd.o (and out/vadd.so, out/vadd.c: the generated source)
--
--   local m = cute.aot.load("out/vadd.so")      -- no recompilation
--   m.vadd_f32(a, b, c)                          -- device tensors (or the flat C arguments)
--
-- Each kernel is one specialisation (its `args` as for k:compile), compiled
-- for every requested arch (no GPU needed: cross-compilation); the object
-- holds the cubins, picks one at load time by the device's compute
-- capability, and has a launch wrapper per kernel taking the kernel's
-- parameters as typed C arguments (device pointers, the run-time shape and
-- stride values, scalars) and a stream. The launch geometry (grid, block,
-- dynamic shared memory) is computed in the wrapper from those arguments: the
-- `grid`/`block`/`smem` of each entry are numbers, tables of up to three, or
-- functions called with symbolic arguments (tensors whose run-time extents
-- are C expressions), so that `cute.ceil_div(cute.size(c), 256)` becomes the
-- same C arithmetic. The object needs only the CUDA driver (-lcuda) and libc.
--
-- Metadata embedded: cutelua's version, the CUDA version used, the archs, a
-- SHA-256 of each kernel's IR, and a checksum over the metadata, the
-- descriptor tables (kernel and parameter names, C types, sizes, kinds, the
-- image table) and the cubins, checked before anything is loaded. The shared
-- library is also sealed: a SHA-256 of all its bytes appended to the file
-- (src/aot/aot_file.c), which the loaders check before dlopen. Exporting needs a C compiler (CC, else
-- cc) and the CUDA headers (CUDA_HOME, else /usr/local/cuda).
-- luacheck: max line length 130
local ffi = require "ffi"
local err = require "cute._err"
local L = require "cute.layout"
local compiler = require "cute.compiler"
local kernel_mod = require "cute.kernel"

local M = {}

-- the file checks and the seal (src/aot/aot.cdef)
local function aot_c() return require("cute._c").aot end

--- Appends (or renews) the seal of a shared library (what cute.export does
-- last): for tests that make libraries of their own.
function M._seal(path)
  local ebuf = ffi.new("char[1024]")
  if aot_c().seal(path, ebuf, 1024) ~= 0 then err.raise("cute.aot: %s", ffi.string(ebuf)) end
end

--- Checks an exported library's file without loading it (cutelua_aot_check_file):
-- true, or false and why.
-- @param path the shared library's path
-- @return true, or false and the reason
-- @usage assert(cute.aot.check_file("out/vadd.so"))
function M.check_file(path)
  local ebuf = ffi.new("char[1024]")
  if aot_c().check_file(path, ebuf, 1024) ~= 0 then return false, ffi.string(ebuf) end
  return true
end

-- ---------------------------------------------------------------------------
-- Symbolic integers: C expressions (int64_t) the layout algebra can compute
-- with (the __cute_int protocol of cute.arith)

local Sym = { __name = "Sym" }
Sym.__index = Sym

-- Each symbolic integer also carries the same arithmetic as Lua (`lua`), in
-- terms of the C parameters' names: the metadata keeps it, so that a loader
-- that does not run the object's code (cute.aot.load of a .o) computes the
-- launch geometry as the C wrapper does.
local function sym(code, lua)
  if not lua then lua = code:match("^%(int64_t%)([%a_][%w_]*)$") or code:match("^[%a_][%w_]*$") end
  return setmetatable({ code = code, lua = lua }, Sym)
end
local function is_sym(x) return getmetatable(x) == Sym end
local function c_of(x)
  if is_sym(x) then return x.code end
  if type(x) == "number" then
    if x ~= math.floor(x) then err.raise("export: the launch geometry has a non-integer %s", tostring(x)) end
    return string.format("(int64_t)%d", x)
  end
  err.raise("export: the launch geometry uses %s, which cannot be computed in C", tostring(x))
end
-- the Lua form (nil when some part has none)
local function lua_of(x)
  if is_sym(x) then return x.lua end
  c_of(x)
  return string.format("%d", x)
end
local function lua2(fmt, a, b)
  local la, lb = lua_of(a), lua_of(b)
  return la and lb and string.format(fmt, la, lb) or nil
end
local function binop(fmt, lfmt)
  return function(a, b) return sym(string.format(fmt, c_of(a), c_of(b)), lua2(lfmt or fmt, a, b)) end
end

Sym.__cute_int = {
  add = binop("(%s + %s)"), sub = binop("(%s - %s)"), mul = binop("(%s * %s)"),
  neg = function(a) return sym("(-" .. c_of(a) .. ")", lua_of(a) and ("(-" .. lua_of(a) .. ")")) end,
  -- C's division and remainder truncate toward zero
  div = binop("(%s / %s)", "cdiv(%s, %s)"), mod = binop("(%s %% %s)", "cmod(%s, %s)"),
  min = function(a, b) return sym(string.format("cl_min64(%s, %s)", c_of(a), c_of(b)), lua2("min(%s, %s)", a, b)) end,
  max = function(a, b) return sym(string.format("cl_max64(%s, %s)", c_of(a), c_of(b)), lua2("max(%s, %s)", a, b)) end,
}
Sym.__add = Sym.__cute_int.add
Sym.__sub = Sym.__cute_int.sub
Sym.__mul = Sym.__cute_int.mul
Sym.__div = Sym.__cute_int.div
Sym.__mod = Sym.__cute_int.mod
Sym.__unm = Sym.__cute_int.neg
Sym.__tostring = function(s) return s.code end
M._sym = sym

-- ---------------------------------------------------------------------------
-- The kernels of an export

local C_TYPES = {
  uint64_t = true, int64_t = true, int32_t = true, uint32_t = true, int16_t = true, uint16_t = true, int8_t = true,
  uint8_t = true, float = true, double = true, bool = "_Bool",
}

local function c_ident(s, what)
  if type(s) ~= "string" or not s:match("^[%a_][%w_]*$") then
    err.raise("export: %s must be a C identifier, got %s", what, tostring(s))
  end
  return s
end

-- Symbolic arguments for geometry functions: tensors whose run-time extents and
-- strides are C expressions (the C parameters' names), scalars and IntTuple
-- leaves likewise, TMA atoms with their tensor's extents as `shape`.
local function symbolic_args(specs, names)
  local sargs = {}
  for i, s in ipairs(specs) do
    if s.kind == "tensor" then
      local shape, stride = L.shape(s.layout), L.stride(s.layout)
      local sl, dl = {}, {}
      local function leaves(x, out)
        if type(x) == "table" then for j = 1, #x do leaves(x[j], out) end else out[#out + 1] = x end
        return out
      end
      sl, dl = leaves(shape, sl), leaves(stride, dl)
      local base = names[i] or ("arg" .. i)
      local ssym, dsym = {}, {}
      for j = 1, #sl do
        ssym[j] = s.static and sl[j] or sym(string.format("(int64_t)%s_shape_%d", base, j - 1))
      end
      for j = 1, #dl do
        dsym[j] = (s.static or dl[j] == 0 or dl[j] == 1) and dl[j] or sym(string.format("(int64_t)%s_stride_%d", base,
          j - 1))
      end
      local function rebuild(x, list, pos)
        if type(x) == "table" then
          local out = {}
          for j = 1, #x do out[j], pos = rebuild(x[j], list, pos) end
          return out, pos
        end
        return list[pos], pos + 1
      end
      local layout = L.make_layout((rebuild(shape, ssym, 1)), (rebuild(stride, dsym, 1)))
      sargs[i] = { layout = layout, dtype = s.dtype, shape = L.shape(layout), stride = L.stride(layout) }
    elseif s.kind == "scalar" then
      sargs[i] = sym("(int64_t)" .. (names[i] or ("arg" .. i)))
    elseif s.kind == "tma_atom" then
      -- the atom (its static facts), with its tensor's run-time extents as `shape`
      local base, shp = names[i] or ("arg" .. i), {}
      for j = 1, s.atom.rank do shp[j] = sym(string.format("(int64_t)%s_shape_%d", base, j - 1)) end
      sargs[i] = setmetatable({ shape = shp }, { __index = s.atom })
    elseif s.kind == "tuple" then
      -- static leaves as numbers, run-time ones as their C parameters
      local base, j = names[i] or ("arg" .. i), 0
      local function build(x)
        if type(x) == "table" and getmetatable(x) ~= require("cute.dtype").Scalar then
          local out = {}
          for q = 1, #x do out[q] = build(x[q]) end
          return out
        end
        j = j + 1
        if type(x) == "number" then return x end
        return sym(string.format("(int64_t)%s_%d", base, j - 1))
      end
      sargs[i] = build(s.value)
    else
      sargs[i] = s.value
    end
  end
  return sargs
end

-- One kernel entry: its specialisation for every arch, its C parameters and
-- the symbolic arguments for its geometry functions.
local function collect(entry, archs, idx)
  local k = entry.kernel
  if getmetatable(k) ~= kernel_mod.Kernel then
    err.raise("export: kernels[%d].kernel must be a cute.kernel, got %s", idx, tostring(k))
  end
  local name = c_ident(entry.name or k.name, string.format("kernels[%d].name", idx))
  local args = entry.args or {}
  local per_arch = {}
  local spec0
  for i, arch in ipairs(archs) do
    -- always traced: an export records the IR (and its hash) of what it ships
    local ka = k:with({ arch = arch, checked = false, trace_key = false })
    local spec = ka:_specialise(#args, unpack(args))
    per_arch[i] = { arch = arch, cubin = spec.compiled:cubin(), ir = spec.compiled:ir() }
    spec0 = spec0 or spec
  end
  -- the C parameters, named after the Lua parameters; kargs: the kernel's
  -- arguments as C expressions (most are a C parameter; a TMA atom's
  -- descriptor is encoded in the wrapper from its tensor's parameters)
  local params, kargs, tma, kinfo = {}, {}, {}, {}
  for _, p in ipairs(spec0.params) do
    local base = k.names[p.arg] or ("arg" .. p.arg)
    if p.what == "tma_atom" then
      local a = spec0.specs[p.arg].atom
      local g = a.gmem
      local contiguous = a.dim_modes[1]
      c_ident(base, "a parameter name")
      params[#params + 1] = { name = base, ctype = "uint64_t", what = "ptr", arg = p.arg, leaf = 1, atom = true }
      for j = 1, a.rank do
        params[#params + 1] = { name = string.format("%s_shape_%d", base, j - 1), ctype = "int64_t", what = "shape",
          arg = p.arg, leaf = j, atom = true }
      end
      for j = 1, a.rank do
        if j - 1 ~= contiguous then
          params[#params + 1] = { name = string.format("%s_stride_%d", base, j - 1), ctype = "int64_t",
            what = "stride", arg = p.arg, leaf = j, atom = true }
        end
      end
      tma[#tma + 1] = { name = base, atom = a, arg = p.arg, gmem = g }
      kargs[#kargs + 1] = string.format("(void *)&%s_desc", base)
      kinfo[#kinfo + 1] = { tma = true, name = base }
      goto continue
    end
    if p.what == "tma" then
      c_ident(base, "a parameter name")
      params[#params + 1] = { name = base, ctype = "const void *", what = "tma", arg = p.arg, leaf = 1 }
      kargs[#kargs + 1] = string.format("(void *)%s", base)
      kinfo[#kinfo + 1] = { tma = true, name = base }
      goto continue
    end
    local cname
    if p.what == "ptr" then cname = base
    elseif p.what == "shape" then cname = string.format("%s_shape_%d", base, p.leaf - 1)
    elseif p.what == "stride" then cname = string.format("%s_stride_%d", base, p.leaf - 1)
    elseif p.what == "tuple" then cname = string.format("%s_%d", base, p.leaf - 1)
    else cname = base end
    local ct = p.ctype
    if not C_TYPES[ct] then err.raise("export: %s has a parameter of C type %s, which is not exportable", name, ct) end
    if C_TYPES[ct] ~= true then ct = C_TYPES[ct] end
    params[#params + 1] = { name = c_ident(cname, "a parameter name"), ctype = ct, what = p.what, arg = p.arg,
      leaf = p.leaf, dtype = p.dtype }
    kargs[#kargs + 1] = "(void *)&" .. cname
    kinfo[#kinfo + 1] = { ctype = ct, name = cname }
    ::continue::
  end
  -- symbolic arguments for the geometry: tensors with C expressions as run-time leaves
  local sargs = symbolic_args(spec0.specs, k.names)
  -- the geometry, as C expressions
  local function dims(x, what)
    if type(x) == "function" then x = x(unpack(sargs, 1, #spec0.specs)) end
    if x == nil then err.raise("export: %s of %s is missing", what, name) end
    if type(x) ~= "table" or is_sym(x) then x = { x } end
    local out = { lua = {} }
    for j = 1, 3 do out[j], out.lua[j] = c_of(x[j] or 1), lua_of(x[j] or 1) end
    return out
  end
  local smem = entry.smem or 0
  if type(smem) == "function" then smem = smem(unpack(sargs, 1, #spec0.specs)) end
  local cluster = k.cluster or entry.cluster
  if cluster and type(cluster) ~= "table" then cluster = { cluster } end
  return {
    name = name, doc = entry.doc, kernel = k, params = params, kargs = kargs, kinfo = kinfo, tma = tma,
    specs = spec0.specs,
    per_arch = per_arch,
    grid = dims(entry.grid, "grid"), block = dims(entry.block, "block"),
    smem = c_of(smem), smem_lua = lua_of(smem), dyn_smem = spec0.dyn_smem or 0,
    cluster = cluster and { cluster[1] or 1, cluster[2] or 1, cluster[3] or 1 } or nil,
    ir_hash = compiler.sha256(per_arch[1].ir),
  }
end

-- The C parameter name of a kernel or host argument's parameter (what, leaf).
local function param_cname(base, what, leaf)
  if what == "shape" then return string.format("%s_shape_%d", base, leaf - 1) end
  if what == "stride" then return string.format("%s_stride_%d", base, leaf - 1) end
  if what == "tuple" then return string.format("%s_%d", base, leaf - 1) end
  return base
end
local WHAT_ORDER = { ptr = 1, shape = 2, stride = 3, value = 4, tuple = 5 }

-- A host function entry {name =, host = function(launch, args...) ... end,
-- args = {...}}: the host function is called once, at export, with symbolic
-- arguments and a `launch(kernel, cfg, args...)` that records each launch;
-- each launched kernel is specialised for the host's (fake) arguments it is
-- given and becomes a kernel of the module (internal: no wrapper of its own);
-- the host's C parameters are those its launches use, named after the host
-- function's parameters. Returns the entry and its step kernels.
local function collect_host(entry, archs, idx)
  local where = string.format("kernels[%d]", idx)
  local name = c_ident(entry.name, where .. ".name")
  if type(entry.host) ~= "function" then err.raise("export: %s.host must be a function", where) end
  local kargs_mod = require "cute.kernel_args"
  local names = kargs_mod.param_names(entry.host)
  table.remove(names, 1) -- launch
  local args = entry.args or {}
  local specs = {}
  for i = 1, #args do
    specs[i] = kargs_mod.classify(args[i], nil, names[i], i)
    if specs[i].kind == "tma" or specs[i].kind == "tma_atom" then
      err.raise("export: host function %s: argument %d is a TMA descriptor or atom, which host functions do not take "
        .. "yet; export the kernel itself", name, i)
    end
  end
  local sargs = symbolic_args(specs, names)
  local proxy = {}
  for i = 1, #args do if type(sargs[i]) == "table" then proxy[sargs[i]] = i end end
  local steps = {}
  local function launch(k, cfg, ...)
    local n = #steps + 1
    if getmetatable(k) ~= kernel_mod.Kernel then
      err.raise("export: host function %s, launch %d: expected a cute.kernel, got %s", name, n, tostring(k))
    end
    if type(cfg) ~= "table" then err.raise("export: host function %s, launch %d: expected {grid =, block =}", name, n) end
    local largs, from = {}, {}
    for j = 1, select("#", ...) do
      local a = select(j, ...)
      local i = type(a) == "table" and proxy[a]
      if i then
        largs[j], from[j] = args[i], i
      elseif type(a) == "table" and (a.layout or getmetatable(a) == require("cute.dtype").Scalar) then
        if a.layout then
          err.raise("export: host function %s, launch %d: argument %d is a tensor that is not one of the host "
            .. "function's arguments (views and new tensors cannot be made at launch time in C)", name, n, j)
        end
        largs[j] = a -- a literal scalar, baked in
      elseif is_sym(a) then
        err.raise("export: host function %s, launch %d: argument %d is computed from the arguments (%s); pass the "
          .. "host's arguments themselves", name, n, j, a.code)
      else
        largs[j] = a
      end
    end
    local kx = collect({ name = string.format("%s_step%d", name, n), kernel = k, args = largs, grid = 1, block = 1 },
      archs, idx)
    if #kx.tma > 0 then err.raise("export: host function %s, launch %d: kernels taking TMA atoms are not supported "
      .. "in host functions yet", name, n) end
    kx.internal = true
    local function dims(x, what)
      if x == nil then err.raise("export: host function %s, launch %d: %s is missing", name, n, what) end
      if type(x) ~= "table" or is_sym(x) then x = { x } end
      local out = { lua = {} }
      for j = 1, 3 do out[j], out.lua[j] = c_of(x[j] or 1), lua_of(x[j] or 1) end
      return out
    end
    local cluster = k.cluster or cfg.cluster
    if cluster and type(cluster) ~= "table" then cluster = { cluster } end
    -- each of the step's C parameters as an expression of the host's
    local exprs = {}
    for q, p in ipairs(kx.params) do
      local i = from[p.arg]
      if i then
        local cn = param_cname(names[i] or ("arg" .. i), p.what, p.leaf)
        exprs[q] = { host = i, what = p.what, leaf = p.leaf, ctype = p.ctype, code = cn, lua = cn }
      else
        local v = largs[p.arg]
        local lit = string.format("%.17g", type(v) == "table" and v.value or v)
        exprs[q] = { ctype = p.ctype, code = lit, lua = lit }
      end
    end
    steps[n] = { kx = kx, exprs = exprs, grid = dims(cfg.grid, "grid"), block = dims(cfg.block, "block"),
      smem = c_of(cfg.smem or 0), smem_lua = lua_of(cfg.smem or 0),
      cluster = cluster and { cluster[1] or 1, cluster[2] or 1, cluster[3] or 1 } or nil }
  end
  entry.host(launch, unpack(sargs, 1, #args))
  if #steps == 0 then err.raise("export: host function %s launches nothing", name) end
  -- the host's C parameters: those its launches use, in argument order
  local params, by_name = {}, {}
  for _, st in ipairs(steps) do
    for _, e in ipairs(st.exprs) do
      if e.host then
        local old = by_name[e.code]
        if old and old.ctype ~= e.ctype then
          err.raise("export: host function %s: %s is %s in one launch and %s in another", name, e.code, old.ctype,
            e.ctype)
        end
        if not old then
          local p = { name = c_ident(e.code, "a parameter name"), ctype = e.ctype, what = e.what, arg = e.host,
            leaf = e.leaf }
          by_name[e.code] = p
          params[#params + 1] = p
        end
      end
    end
  end
  table.sort(params, function(a, b)
    if a.arg ~= b.arg then return a.arg < b.arg end
    if a.what ~= b.what then return WHAT_ORDER[a.what] < WHAT_ORDER[b.what] end
    return (a.leaf or 0) < (b.leaf or 0)
  end)
  local host = { name = name, doc = entry.doc, host = true, params = params, specs = specs, names = names,
    steps = steps }
  local kernels = {}
  for i, st in ipairs(steps) do kernels[i] = st.kx end
  return host, kernels
end

-- ---------------------------------------------------------------------------
-- C generation

local function fnv1a64(parts)
  local h = ffi.new("uint64_t", 0xcbf29ce484222325ULL)
  local prime = ffi.new("uint64_t", 0x100000001b3ULL)
  for _, s in ipairs(parts) do
    local p = ffi.cast("const uint8_t *", s)
    for i = 0, #s - 1 do
      h = bit.bxor(h, p[i])
      h = h * prime
    end
  end
  return h
end

-- A byte string as a C array of little-endian 64-bit words (aligned, and
-- valid pedantic C99: no string literal length limit).
local function words_of(s)
  local n = math.ceil(#s / 8)
  local padded = s .. string.rep("\0", n * 8 - #s)
  local p = ffi.cast("const uint64_t *", padded)
  local out, line = {}, {}
  for i = 0, n - 1 do
    line[#line + 1] = string.format("0x%08x%08xULL", tonumber(bit.rshift(p[i], 32)), tonumber(bit.band(p[i], 0xffffffff)))
    if #line == 4 then
      out[#out + 1] = "  " .. table.concat(line, ", ") .. ","
      line = {}
    end
  end
  if #line > 0 then out[#out + 1] = "  " .. table.concat(line, ", ") .. "," end
  return table.concat(out, "\n"), n
end

-- The C parameters' descriptor rows: name, C type, size, kind (0 pointer, 1
-- extent, 2 stride, 3 scalar, 4 run-time leaf of an IntTuple), kernel
-- argument and leaf (0-based; of a tuple: among all its leaves, static ones
-- counted).
local PARAM_KINDS = { ptr = 0, shape = 1, stride = 2, value = 3, tuple = 4, tma = 5 }
local function param_rows(kx)
  local rows = {}
  for i, p in ipairs(kx.params) do
    rows[i] = { name = p.name, ctype = p.ctype, size = ffi.sizeof(p.ctype == "_Bool" and "bool" or p.ctype),
      kind = PARAM_KINDS[p.what] or 3, arg = p.arg - 1, leaf = (p.leaf or 1) - 1 }
  end
  return rows
end

-- What <prefix>_desc_digest hashes, in its order (integers as "%d;", strings
-- with their NUL), appended to parts.
local function desc_digest_parts(kernels, entries, images, meta, parts)
  local function int(v) parts[#parts + 1] = string.format("%d;", v) end
  local function str(v) parts[#parts + 1] = v .. "\0" end
  int(1) -- CUTELUA_AOT_ABI
  int(#entries)
  str(meta) -- what desc.metadata points at
  for _, kx in ipairs(kernels) do
    str(kx.kernel.name)
    str(kx.name)
    int(kx.dyn_smem)
  end
  for _, kx in ipairs(entries) do
    str(kx.name)
    int(#kx.params)
    for _, r in ipairs(kx.rows) do
      str(r.name)
      str(r.ctype)
      int(r.size)
      int(r.kind)
      int(r.arg)
      int(r.leaf)
    end
  end
  for _, im in ipairs(images) do
    int(im.kernel - 1)
    str(im.arch)
    int(im.major)
    int(im.minor)
    int(im.exact and 1 or 0)
    int(#im.cubin)
  end
end

local function c_string(s)
  return '"' .. s:gsub("\\", "\\\\"):gsub('"', '\\"'):gsub("\n", "\\n") .. '"'
end

-- A target's compute capability (major, minor) and whether it is an "a"
-- target (exact cc), from the target table (src/target).
local function arch_cc(arch)
  local row = compiler.target(arch)
  if not row then err.raise("export: %s is not an arch (sm_80, sm_90a, ...)", tostring(arch)) end
  return math.floor(row.cc / 10), row.cc % 10, row.arch_specific
end

-- What a tensor parameter's layout is, for the header's comments.
local function describe_arg(k, spec, i)
  local nm = k.names[i] or ("arg" .. i)
  if spec.kind == "tensor" then
    local lay = spec.layout
    local leaves = {}
    local function walk(x)
      if type(x) == "table" then for j = 1, #x do walk(x[j]) end else leaves[#leaves + 1] = x end
    end
    walk(L.shape(lay))
    local shape_desc
    if spec.static then
      shape_desc = "static layout " .. tostring(lay)
    else
      local stride_desc = {}
      local dl = {}
      local function walk2(x)
        if type(x) == "table" then for j = 1, #x do walk2(x[j]) end else dl[#dl + 1] = x end
      end
      walk2(L.stride(lay))
      local nd = 0
      for j = 1, #dl do
        if dl[j] == 0 or dl[j] == 1 then
          stride_desc[j] = tostring(dl[j])
        else
          nd = nd + 1
          local div = spec.stride_divs and spec.stride_divs[nd] or 0
          stride_desc[j] = string.format("%s_stride_%d%s", nm, j - 1,
            div > 0 and string.format(" (a multiple of %d)", 2 ^ div) or "")
        end
      end
      shape_desc = string.format("layout %s: extents %s_shape_0..%d; strides %s", (tostring(lay):gsub("%d+", "?")),
        nm, #leaves - 1, table.concat(stride_desc, ", "))
    end
    return string.format("%s: a device pointer to %s, %s; at least %d-byte aligned", nm, spec.dtype.name, shape_desc,
      spec.align)
  elseif spec.kind == "scalar" then
    return string.format("%s: a %s scalar", nm, spec.dtype.name)
  elseif spec.kind == "tma_atom" then
    local a = spec.atom
    local strides = {}
    for j = 1, a.rank do if j - 1 ~= a.dim_modes[1] then strides[#strides + 1] = nm .. "_stride_" .. (j - 1) end end
    return string.format("%s: the global tensor of a TMA atom (%s of %s, box %s, swizzle %s): a device pointer (16-byte "
      .. "aligned), its extents %s_shape_0..%d and strides %s in elements (mode %d contiguous: stride 1; the others' "
      .. "byte strides multiples of 16); the wrapper encodes the descriptor (cuTensorMapEncodeTiled) and returns its "
      .. "CUresult if the tensor breaks TMA's rules", nm, a.op.name, a.dtype.name, table.concat(a.box, "x"),
      a.swizzle or "none", nm, a.rank - 1, #strides > 0 and table.concat(strides, ", ") or "(none)", a.dim_modes[1])
  elseif spec.kind == "tma" then
    return string.format("%s: a pointer to a prepared TMA descriptor (a CUtensorMap, 128 bytes, 64-byte aligned), "
      .. "copied into the launch's parameters", nm)
  elseif spec.kind == "tuple" then
    local dyn = {}
    for _, d in ipairs(spec.dyn) do dyn[#dyn + 1] = string.format("%s_%d (%s)", nm, d.leaf - 1, d.dtype.storage) end
    return string.format("%s: an IntTuple of profile %s (? marks a run-time leaf; numbers are baked in): %s", nm,
      spec.profile, #dyn > 0 and ("run-time leaves " .. table.concat(dyn, ", ")) or "all static, no parameter")
  end
  return string.format("%s: compile-time %s (baked in)", nm, tostring(spec.value))
end

-- The C that encodes a TMA atom's descriptor in a launch wrapper, from its
-- tensor's C parameters (address, extents, strides in elements) and the
-- atom's static facts (data type, box, element strides, swizzle, L2
-- promotion, out-of-bounds fill, dimension order), as TmaAtom:tma_spec and
-- cute.tma_descriptor do in Lua. A failure returns the driver's CUresult
-- (CUDA_ERROR_INVALID_VALUE for a tensor that breaks TMA's rules).
local tma_encode, host_header, host_wrapper
local L2_CODE, OOB_CODE = { none = 0, ["64B"] = 1, ["128B"] = 2, ["256B"] = 3 }, { zero = 0, nan = 1 }
tma_encode = function(s, t)
  local a, nm = t.atom, t.name
  local rank, bytes = a.rank, a.dtype.bytes
  local box, es = {}, {}
  for d = 1, rank do box[d], es[d] = tostring(a.box[d]), tostring(a.element_strides and a.element_strides[d] or 1) end
  s("  {")
  s("    cuuint64_t dims[%d], strides[%d];", rank, math.max(rank - 1, 1))
  s("    const cuuint32_t box[%d] = {%s}, es[%d] = {%s};", rank, table.concat(box, ", "), rank, table.concat(es, ", "))
  s("    uint64_t span;")
  s("    CUresult r;")
  s("    strides[0] = 0;")
  -- dimension 0 is the contiguous mode (stride 1, no parameter); the others in the atom's order
  local m0 = a.dim_modes[1]
  s("    if (%s_shape_%d <= 0) return (int)CUDA_ERROR_INVALID_VALUE;", nm, m0)
  s("    dims[0] = (cuuint64_t)%s_shape_%d;", nm, m0)
  s("    span = (uint64_t)%s_shape_%d * %d;", nm, m0, bytes)
  for d = 2, rank do
    local m = a.dim_modes[d]
    s("    if (%s_shape_%d <= 0 || (%s_shape_%d != 1 && %s_stride_%d <= 0)) return (int)CUDA_ERROR_INVALID_VALUE;", nm,
      m, nm, m, nm, m)
    s("    dims[%d] = (cuuint64_t)%s_shape_%d;", d - 1, nm, m)
    -- a mode of one element: its stride is never used; the next multiple of 16 bytes past the span (as in Lua)
    s("    if (%s_shape_%d == 1) strides[%d] = span < 16 ? 16 : (span + 15) / 16 * 16;", nm, m, d - 2)
    s("    else { strides[%d] = (cuuint64_t)%s_stride_%d * %d; if (strides[%d] * (uint64_t)%s_shape_%d > span) span = "
      .. "strides[%d] * (uint64_t)%s_shape_%d; }", d - 2, nm, m, bytes, d - 2, nm, m, d - 2, nm, m)
  end
  s("    r = cuTensorMapEncodeTiled(&%s_desc, (CUtensorMapDataType)%d, %d, (void *)(uintptr_t)%s, dims, strides, box, es,",
    nm, a.tma_dtype.tma, rank, nm)
  s("                               CU_TENSOR_MAP_INTERLEAVE_NONE, (CUtensorMapSwizzle)%d, (CUtensorMapL2promotion)%d,",
    a.swizzle_code or 0, L2_CODE[a.l2 or "none"] or 0)
  s("                               (CUtensorMapFloatOOBfill)%d);", OOB_CODE[a.oob or "zero"] or 0)
  s("    if (r != CUDA_SUCCESS) return (int)r;")
  s("  }")
end

local function c_decl(ctype, name) return ctype .. (ctype:sub(-1) == "*" and "" or " ") .. name end

-- A host function's declaration and documentation in the header.
host_header = function(h, P, hx)
  h("/* %s%s", hx.name, hx.doc and (": " .. hx.doc) or "")
  for i, sp in ipairs(hx.specs) do h(" *   %s", describe_arg({ names = hx.names }, sp, i)) end
  h(" * Launches, in order, on the stream (each with the kernel's own dynamic shared memory added):")
  for n, st in ipairs(hx.steps) do
    h(" *   %d. kernel %s: grid (%s, %s, %s), block (%s, %s, %s)%s", n, st.kx.kernel.name, st.grid[1], st.grid[2],
      st.grid[3], st.block[1], st.block[2], st.block[3],
      st.cluster and string.format(", clusters of (%d, %d, %d)", st.cluster[1], st.cluster[2], st.cluster[3]) or "")
  end
  h(" * Returns 0, or the first launch's failure (the launches after it are not made). */")
  local plist = { P .. "_module *module" }
  for _, p in ipairs(hx.params) do plist[#plist + 1] = c_decl(p.ctype, p.name) end
  plist[#plist + 1] = "struct CUstream_st *stream"
  h("int %s_%s(%s);", P, hx.name, table.concat(plist, ", "))
  h("")
end

-- A host function's wrapper (its launches in order), its packed entry and
-- parameter table; returns its descriptor row.
host_wrapper = function(s, P, hx)
  local plist = { P .. "_module *m" }
  for _, p in ipairs(hx.params) do plist[#plist + 1] = c_decl(p.ctype, p.name) end
  plist[#plist + 1] = "struct CUstream_st *stream"
  s("int %s_%s(%s) {", P, hx.name, table.concat(plist, ", "))
  s("  CUresult r;")
  s("  if (!m) return (int)CUDA_ERROR_INVALID_HANDLE;")
  for n, st in ipairs(hx.steps) do
    local kx = st.kx
    s("  { /* launch %d: %s */", n, kx.kernel.name)
    local anames = {}
    for q, e in ipairs(st.exprs) do
      s("    %s a%d = (%s)(%s);", e.ctype, q, e.ctype, e.code)
      anames[q] = "(void *)&a" .. q
    end
    s("    void *args[%d] = {%s};", math.max(#anames, 1), #anames > 0 and table.concat(anames, ", ") or "NULL")
    s("    int64_t gx = %s, gy = %s, gz = %s;", st.grid[1], st.grid[2], st.grid[3])
    s("    int64_t bx = %s, by = %s, bz = %s;", st.block[1], st.block[2], st.block[3])
    s("    int64_t smem = %s;", st.smem)
    s("    if (bx <= 0 || by <= 0 || bz <= 0) return (int)CUDA_ERROR_INVALID_VALUE;")
    s("    if (smem < %d) smem = %d;", kx.dyn_smem, kx.dyn_smem)
    s("    if (gx > 0 && gy > 0 && gz > 0) {")
    if st.cluster then
      s("      CUlaunchConfig cfg;")
      s("      CUlaunchAttribute attr;")
      s("      memset(&cfg, 0, sizeof cfg);")
      s("      memset(&attr, 0, sizeof attr);")
      s("      cfg.gridDimX = (unsigned)gx; cfg.gridDimY = (unsigned)gy; cfg.gridDimZ = (unsigned)gz;")
      s("      cfg.blockDimX = (unsigned)bx; cfg.blockDimY = (unsigned)by; cfg.blockDimZ = (unsigned)bz;")
      s("      cfg.sharedMemBytes = (unsigned)smem; cfg.hStream = (CUstream)stream;")
      s("      attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;")
      s("      attr.value.clusterDim.x = %d; attr.value.clusterDim.y = %d; attr.value.clusterDim.z = %d;",
        st.cluster[1], st.cluster[2], st.cluster[3])
      s("      cfg.attrs = &attr; cfg.numAttrs = 1;")
      s("      r = cuLaunchKernelEx(&cfg, m->fn[%d], args, NULL);", kx.index)
    else
      s("      r = cuLaunchKernel(m->fn[%d], (unsigned)gx, (unsigned)gy, (unsigned)gz, (unsigned)bx, (unsigned)by,"
        .. " (unsigned)bz, (unsigned)smem, (CUstream)stream, args, NULL);", kx.index)
    end
    s("      if (r != CUDA_SUCCESS) return (int)r;")
    s("    }")
    s("  }")
  end
  s("  return 0;")
  s("}")
  local unpacked = { "(" .. P .. "_module *)m" }
  for j, p in ipairs(hx.params) do unpacked[#unpacked + 1] = string.format("*(const %s *)args[%d]", p.ctype, j - 1) end
  unpacked[#unpacked + 1] = "(struct CUstream_st *)stream"
  s("static int %s_%s_packed(void *m, void *const *args, void *stream) {", P, hx.name)
  if #hx.params == 0 then s("  (void)args;") end
  s("  return %s_%s(%s);", P, hx.name, table.concat(unpacked, ", "))
  s("}")
  local prows = {}
  for _, r in ipairs(hx.rows) do
    prows[#prows + 1] = string.format('{"%s", "%s", %d, %d, %d, %d}', r.name, r.ctype, r.size, r.kind, r.arg, r.leaf)
  end
  if #prows == 0 then prows[1] = '{"", "", 0, 0, 0, 0}' end
  s("static const cutelua_aot_param %s_%s_params[] = {%s};", P, hx.name, table.concat(prows, ", "))
  s("")
  return string.format('{"%s", %d, %s_%s_params, %s_%s_packed}', hx.name, #hx.params, P, hx.name, P, hx.name)
end

local function generate(ex)
  local P, NAME = ex.prefix, ex.name
  local H = {}
  local function h(fmt, ...) H[#H + 1] = select("#", ...) > 0 and string.format(fmt, ...) or fmt end
  local guard = (NAME .. "_H"):upper():gsub("[^%w_]", "_")
  h("/* %s.h: kernels exported by cutelua %s (CUDA %s) for %s.", NAME, ex.version, ex.cuda, table.concat(ex.archs, ", "))
  h(" * Generated: do not edit. Link %s.o (or %s.so) and -lcuda; nothing else at run time.", NAME, NAME)
  h(" *")
  h(" * Use: make a CUDA context current (or let %s_load retain device 0's primary", P)
  h(" * context), %s_load(&m, err, sizeof err), then call the kernels with device", P)
  h(" * pointers (CUdeviceptr values), the run-time extents and strides of each tensor")
  h(" * (in elements), scalars, and a stream (a CUstream, or NULL); %s_unload(m).", P)
  h(" * Functions return 0 on success, else a CUresult (%s_error_name turns it into text;", P)
  h(" * load failures also write a message into err). */")
  h("#ifndef %s", guard)
  h("#define %s", guard)
  h("")
  h("#include <stddef.h>")
  h("#include <stdint.h>")
  h("")
  h("#ifdef __cplusplus")
  h('extern "C" {')
  h("#endif")
  h("")
  h("/* The descriptors every exported module shares (for cutelua_aot.h and dlopen). */")
  h("#ifndef CUTELUA_AOT_TYPES_DEFINED")
  h("#define CUTELUA_AOT_TYPES_DEFINED")
  h("#define CUTELUA_AOT_ABI 1")
  h("struct CUstream_st; /* a CUstream is a struct CUstream_st * (cuda.h) */")
  h("typedef struct cutelua_aot_param {")
  h("  const char *name;  /* the C parameter */")
  h("  const char *ctype; /* its C type */")
  h("  int size;          /* bytes */")
  h("  int kind; /* 0 device pointer, 1 extent, 2 stride, 3 scalar, 4 run-time leaf of an IntTuple, 5 TMA descriptor pointer */")
  h("  int arg;           /* the kernel argument it comes from (0-based) */")
  h("  int leaf;          /* which leaf of its shape, stride or IntTuple (0-based; static tuple leaves counted) */")
  h("} cutelua_aot_param;")
  h("typedef struct cutelua_aot_kernel { /* an exported kernel, or a host function (several launches) */")
  h("  const char *name;")
  h("  int nparams;")
  h("  const cutelua_aot_param *params;")
  h("  int (*launch_packed)(void *module, void *const *args, void *stream); /* args: pointers to each parameter */")
  h("} cutelua_aot_kernel;")
  h("typedef struct cutelua_aot_module {")
  h("  int abi;                 /* CUTELUA_AOT_ABI */")
  h("  const char *metadata;    /* 'key value' lines: cutelua, cuda, archs, kernels, ir hashes */")
  h("  int nkernels; /* entries: kernels and host functions */")
  h("  const cutelua_aot_kernel *kernels;")
  h("  int (*check)(char *err, size_t errlen);                  /* the embedded checksum */")
  h("  int (*load)(void **module, char *err, size_t errlen);")
  h("  void (*unload)(void *module);")
  h("  const char *(*error_name)(int code);")
  h("} cutelua_aot_module;")
  h("#endif")
  h("")
  h("typedef struct %s_module %s_module;", P, P)
  h("")
  h("/* The embedded metadata, and its check (the checksum over metadata and cubins). */")
  h("const char *%s_metadata(void);", P)
  h("int %s_check(char *err, size_t errlen);", P)
  h("/* Loads the module on the current context's device (device 0's primary context when")
  h(" * none is current), choosing the cubin by compute capability. */")
  h("int %s_load(%s_module **module, char *err, size_t errlen);", P, P)
  h("void %s_unload(%s_module *module);", P, P)
  h("const char *%s_error_name(int code);", P)
  h("const cutelua_aot_module *%s_describe(void);", P)
  h("/* The SHA-256 of the metadata (64 hex digits), for loaders that read the object file. */")
  h("extern const char %s_meta_sha256[];", P)
  h("")
  for _, kx in ipairs(ex.entries) do
    if kx.host then
      host_header(h, P, kx)
      goto next_entry
    end
    h("/* %s%s", kx.name, kx.doc and (": " .. kx.doc) or "")
    for i, s in ipairs(kx.specs) do h(" *   %s", describe_arg(kx.kernel, s, i)) end
    h(" * Launch: grid (%s, %s, %s), block (%s, %s, %s), %s bytes of dynamic shared memory%s. */",
      kx.grid[1], kx.grid[2], kx.grid[3], kx.block[1], kx.block[2], kx.block[3],
      kx.dyn_smem > 0 and tostring(kx.dyn_smem) or kx.smem,
      kx.cluster and string.format(", clusters of (%d, %d, %d)", kx.cluster[1], kx.cluster[2], kx.cluster[3]) or "")
    local plist = { P .. "_module *module" }
    for _, p in ipairs(kx.params) do plist[#plist + 1] = p.ctype .. (p.ctype:sub(-1) == "*" and "" or " ") .. p.name end
    plist[#plist + 1] = "struct CUstream_st *stream"
    h("int %s_%s(%s);", P, kx.name, table.concat(plist, ", "))
    h("")
    ::next_entry::
  end
  h("#ifdef __cplusplus")
  h("}")
  h("#endif")
  h("#endif")
  local header = table.concat(H, "\n") .. "\n"

  -- the source
  local S = {}
  local function s(fmt, ...) S[#S + 1] = select("#", ...) > 0 and string.format(fmt, ...) or fmt end
  s("/* %s.c: generated by cutelua %s; compiled into %s.o (and %s.so). Do not edit. */", NAME, ex.version, NAME, NAME)
  s("#include <stddef.h>")
  s("#include <stdint.h>")
  s("#include <stdio.h>")
  s("#include <stdlib.h>")
  s("#include <string.h>")
  s("#include <cuda.h>")
  s('#include "%s.h"', NAME)
  s("")
  s("static inline int64_t cl_min64(int64_t a, int64_t b) { return a < b ? a : b; }")
  s("static inline int64_t cl_max64(int64_t a, int64_t b) { return a > b ? a : b; }")
  s("")
  s("static const char %s_meta[] = %s;", P, c_string(ex.meta))
  s("/* the SHA-256 of the metadata: cute.aot.load of the object checks it before reading the metadata */")
  s("const char %s_meta_sha256[] = \"%s\";", P, compiler.sha256(ex.meta))
  local images = {}
  for i, im in ipairs(ex.images) do
    local body, n = words_of(im.cubin)
    s("static const uint64_t %s_cubin_%d[%d] = {", P, i, n)
    s(body)
    s("};")
    images[i] = string.format('  {%d, "%s", %d, %d, %d, %s_cubin_%d, %d},', im.kernel - 1, im.arch, im.major, im.minor,
      im.exact and 1 or 0, P, i, #im.cubin)
  end
  s("struct %s_image { int kernel; const char *arch; int major, minor, exact; const uint64_t *data; size_t size; };", P)
  s("static const struct %s_image %s_images[] = {", P, P)
  s(table.concat(images, "\n"))
  s("};")
  s("#define %s_NIMAGES %d", P, #ex.images)
  s("#define %s_NKERNELS %d", P, #ex.kernels)
  s("static const uint64_t %s_checksum = 0x%sULL;", P, ex.checksum_hex)
  s("static const char *const %s_kernel_names[%s_NKERNELS] = {%s};", P, P, (function()
    local t = {}
    for i, kx in ipairs(ex.kernels) do t[i] = '"' .. kx.kernel.name .. '"' end
    return table.concat(t, ", ")
  end)())
  s("static const char *const %s_export_names[%s_NKERNELS] = {%s};", P, P, (function()
    local t = {}
    for i, kx in ipairs(ex.kernels) do t[i] = '"' .. kx.name .. '"' end
    return table.concat(t, ", ")
  end)())
  s("static const unsigned %s_dyn_smem[%s_NKERNELS] = {%s};", P, P, (function()
    local t = {}
    for i, kx in ipairs(ex.kernels) do t[i] = tostring(kx.dyn_smem) end
    return table.concat(t, ", ")
  end)())
  s("")
  s("struct %s_module { CUmodule module[%s_NKERNELS]; CUfunction fn[%s_NKERNELS]; int image[%s_NKERNELS]; };", P, P, P,
    P)
  s("")
  s("const char *%s_metadata(void) { return %s_meta; }", P, P)
  s("")
  s("const char *%s_error_name(int code) {", P)
  s("  const char *name = NULL;")
  s("  if (cuGetErrorName((CUresult)code, &name) != CUDA_SUCCESS || !name) return \"unknown CUDA error\";")
  s("  return name;")
  s("}")
  s("")
  s("static uint64_t %s_fnv(uint64_t h, const void *data, size_t n) {", P)
  s("  const unsigned char *p = (const unsigned char *)data;")
  s("  size_t i;")
  s("  for (i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ULL;")
  s("  return h;")
  s("}")
  s("")
  s("static uint64_t %s_fnv_int(uint64_t h, long long v) {", P)
  s("  char b[32];")
  s("  int n = sprintf(b, \"%lld;\", v);")
  s("  return %s_fnv(h, b, (size_t)n);", P)
  s("}")
  s("")
  s("static uint64_t %s_fnv_str(uint64_t h, const char *str) { return %s_fnv(h, str, strlen(str) + 1); }", P, P)
  s("")
  s("/* the descriptor tables the loaders trust, hashed as cute.export hashed them (defined at the end) */")
  s("static uint64_t %s_desc_digest(uint64_t h);", P)
  s("")
  s("/* The tables are read through pointers that went through volatile objects: the compiler")
  s(" * would otherwise hash the values it knows from the source, not the bytes in memory, which")
  s(" * are what a loader reads. */")
  s("int %s_check(char *err, size_t errlen) {", P)
  s("  uint64_t h = 0xcbf29ce484222325ULL;")
  s("  int i;")
  s("  const struct %s_image *volatile images_v = %s_images;", P, P)
  s("  const char *volatile meta_v = %s_meta;", P)
  s("  const struct %s_image *images = images_v;", P)
  s("  const char *meta = meta_v;")
  -- the image sizes against constants before they bound a read: an altered size would read past the cubin
  s("  if (0")
  for i, im in ipairs(ex.images) do s("      || images[%d].size != %d", i - 1, #im.cubin) end
  s("  ) {")
  s("    if (err && errlen) snprintf(err, errlen, \"%s: the embedded image table was altered; export the module again\");",
    NAME)
  s("    return (int)CUDA_ERROR_INVALID_IMAGE;")
  s("  }")
  s("  h = %s_fnv(h, meta, sizeof %s_meta - 1);", P, P)
  s("  for (i = 0; i < %s_NIMAGES; i++) h = %s_fnv(h, images[i].data, images[i].size);", P, P)
  s("  h = %s_desc_digest(h);", P)
  s("  if (h != %s_checksum) {", P)
  s("    if (err && errlen) snprintf(err, errlen, \"%s: the embedded metadata, descriptor tables or cubins were altered"
    .. " (checksum %%016llx, expected %%016llx); export the module again\", (unsigned long long)h,"
    .. " (unsigned long long)%s_checksum);", NAME, P)
  s("    return (int)CUDA_ERROR_INVALID_IMAGE;")
  s("  }")
  s("  return 0;")
  s("}")
  s("")
  s("#define %s_FAIL(code, ...) do { if (err && errlen) snprintf(err, errlen, __VA_ARGS__); return (int)(code); } while (0)",
    P)
  s("")
  s("int %s_load(%s_module **out, char *err, size_t errlen) {", P, P)
  s("  CUcontext ctx = NULL;")
  s("  CUdevice dev;")
  s("  CUresult r;")
  s("  int major = 0, minor = 0, driver = 0, i, k, best = -1;")
  s("  %s_module *m;", P)
  s("  char have[256] = \"\";")
  s("  if (!out) %s_FAIL(CUDA_ERROR_INVALID_VALUE, \"%s_load: no module pointer\");", P, P)
  s("  *out = NULL;")
  s("  r = (CUresult)%s_check(err, errlen);", P)
  s("  if (r != CUDA_SUCCESS) return (int)r;")
  s("  r = cuInit(0);")
  s("  if (r != CUDA_SUCCESS) %s_FAIL(r, \"%s: cuInit failed: %%s\", %s_error_name((int)r));", P, NAME, P)
  s("  cuDriverGetVersion(&driver);")
  s("  if (driver / 1000 < %d) %s_FAIL(CUDA_ERROR_NOT_SUPPORTED, \"%s: the CUDA driver supports CUDA %%d.%%d; the "
    .. "module was built with CUDA %s and needs a %d.x driver or newer\", driver / 1000, (driver %% 1000) / 10);",
    ex.cuda_major, P, NAME, ex.cuda, ex.cuda_major)
  s("  r = cuCtxGetCurrent(&ctx);")
  s("  if (r == CUDA_SUCCESS && !ctx) {")
  s("    r = cuDeviceGet(&dev, 0);")
  s("    if (r == CUDA_SUCCESS) r = cuDevicePrimaryCtxRetain(&ctx, dev);")
  s("    if (r == CUDA_SUCCESS) r = cuCtxSetCurrent(ctx);")
  s("  }")
  s("  if (r != CUDA_SUCCESS) %s_FAIL(r, \"%s: no CUDA context: %%s\", %s_error_name((int)r));", P, NAME, P)
  s("  r = cuCtxGetDevice(&dev);")
  s("  if (r == CUDA_SUCCESS) r = cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);")
  s("  if (r == CUDA_SUCCESS) r = cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);")
  s("  if (r != CUDA_SUCCESS) %s_FAIL(r, \"%s: cannot query the device: %%s\", %s_error_name((int)r));", P, NAME, P)
  s("  m = (%s_module *)calloc(1, sizeof *m);", P)
  s("  if (!m) %s_FAIL(CUDA_ERROR_OUT_OF_MEMORY, \"%s: out of memory\");", P, NAME)
  s("  for (k = 0; k < %s_NKERNELS; k++) {", P)
  s("    /* an 'a' arch runs on its exact compute capability; others on the same major, same or later minor */")
  s("    best = -1;")
  s("    have[0] = 0;")
  s("    for (i = 0; i < %s_NIMAGES; i++) {", P)
  s("      int ok;")
  s("      if (%s_images[i].kernel != k) continue;", P)
  s("      ok = %s_images[i].major == major && (%s_images[i].exact ? %s_images[i].minor == minor"
    .. " : %s_images[i].minor <= minor);", P, P, P, P)
  s("      if (strlen(have) + 16 < sizeof have) { if (have[0]) strcat(have, \", \"); strcat(have, %s_images[i].arch); }", P)
  s("      if (ok && (best < 0 || %s_images[i].minor > %s_images[best].minor || (%s_images[i].minor == %s_images[best].minor"
    .. " && %s_images[i].exact))) best = i;", P, P, P, P, P)
  s("    }")
  s("    if (best < 0) r = CUDA_ERROR_NO_BINARY_FOR_GPU;")
  s("    else r = cuModuleLoadData(&m->module[k], %s_images[best].data);", P)
  s("    if (r == CUDA_SUCCESS) r = cuModuleGetFunction(&m->fn[k], m->module[k], %s_kernel_names[k]);", P)
  s("    if (r == CUDA_SUCCESS && %s_dyn_smem[k] > 48 * 1024)", P)
  s("      r = cuFuncSetAttribute(m->fn[k], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)%s_dyn_smem[k]);", P)
  s("    if (r != CUDA_SUCCESS) {")
  s("      int j;")
  s("      for (j = 0; j < k; j++) cuModuleUnload(m->module[j]);")
  s("      if (best >= 0 && m->module[k]) cuModuleUnload(m->module[k]);")
  s("      free(m);")
  s("      if (best < 0)")
  s("        %s_FAIL(r, \"%s: no cubin of kernel %%s for this GPU: the module has %%s; the device is sm_%%d%%d (compute"
    .. " capability %%d.%%d)\", %s_export_names[k], have, major, minor, major, minor);", P, NAME, P)
  s("      %s_FAIL(r, \"%s: kernel %%s (%%s cubin): %%s (driver %%d.%%d, module built with CUDA %s)\", %s_export_names[k],"
    .. " %s_images[best].arch, %s_error_name((int)r), driver / 1000, (driver %% 1000) / 10);", P, NAME, ex.cuda, P, P, P)
  s("    }")
  s("    m->image[k] = best;")
  s("  }")
  s("  *out = m;")
  s("  return 0;")
  s("}")
  s("")
  s("void %s_unload(%s_module *m) {", P, P)
  s("  int k;")
  s("  if (!m) return;")
  s("  for (k = 0; k < %s_NKERNELS; k++) cuModuleUnload(m->module[k]);", P)
  s("  free(m);")
  s("}")
  s("")
  -- the launch wrappers
  local kdesc_of = {}
  for ki, kx in ipairs(ex.kernels) do
    if kx.internal then goto next_kernel end
    local plist, anames = { P .. "_module *m" }, kx.kargs
    for _, p in ipairs(kx.params) do plist[#plist + 1] = p.ctype .. (p.ctype:sub(-1) == "*" and "" or " ") .. p.name end
    plist[#plist + 1] = "struct CUstream_st *stream"
    s("int %s_%s(%s) {", P, kx.name, table.concat(plist, ", "))
    for _, t in ipairs(kx.tma) do s("  CUtensorMap %s_desc;", t.name) end
    s("  void *args[%d] = {%s};", math.max(#anames, 1), #anames > 0 and table.concat(anames, ", ") or "NULL")
    s("  int64_t gx = %s, gy = %s, gz = %s;", kx.grid[1], kx.grid[2], kx.grid[3])
    s("  int64_t bx = %s, by = %s, bz = %s;", kx.block[1], kx.block[2], kx.block[3])
    s("  int64_t smem = %s;", kx.smem)
    s("  if (!m) return (int)CUDA_ERROR_INVALID_HANDLE;")
    s("  if (gx <= 0 || gy <= 0 || gz <= 0) return 0; /* nothing to do */")
    s("  if (bx <= 0 || by <= 0 || bz <= 0) return (int)CUDA_ERROR_INVALID_VALUE;")
    s("  if (smem < %d) smem = %d;", kx.dyn_smem, kx.dyn_smem)
    for _, t in ipairs(kx.tma) do tma_encode(s, t) end
    if kx.cluster then
      s("  {")
      s("    CUlaunchConfig cfg;")
      s("    CUlaunchAttribute attr;")
      s("    memset(&cfg, 0, sizeof cfg);")
      s("    memset(&attr, 0, sizeof attr);")
      s("    cfg.gridDimX = (unsigned)gx; cfg.gridDimY = (unsigned)gy; cfg.gridDimZ = (unsigned)gz;")
      s("    cfg.blockDimX = (unsigned)bx; cfg.blockDimY = (unsigned)by; cfg.blockDimZ = (unsigned)bz;")
      s("    cfg.sharedMemBytes = (unsigned)smem; cfg.hStream = (CUstream)stream;")
      s("    attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;")
      s("    attr.value.clusterDim.x = %d; attr.value.clusterDim.y = %d; attr.value.clusterDim.z = %d;", kx.cluster[1],
        kx.cluster[2], kx.cluster[3])
      s("    cfg.attrs = &attr; cfg.numAttrs = 1;")
      s("    return (int)cuLaunchKernelEx(&cfg, m->fn[%d], args, NULL);", ki - 1)
      s("  }")
    else
      s("  return (int)cuLaunchKernel(m->fn[%d], (unsigned)gx, (unsigned)gy, (unsigned)gz, (unsigned)bx, (unsigned)by,"
        .. " (unsigned)bz, (unsigned)smem, (CUstream)stream, args, NULL);", ki - 1)
    end
    s("}")
    s("")
    -- the packed entry and the descriptor
    local unpacked = { "(" .. P .. "_module *)m" }
    for j, p in ipairs(kx.params) do
      unpacked[#unpacked + 1] = p.what == "tma" and string.format("*(const void *const *)args[%d]", j - 1)
        or string.format("*(const %s *)args[%d]", p.ctype, j - 1)
    end
    unpacked[#unpacked + 1] = "(struct CUstream_st *)stream"
    s("static int %s_%s_packed(void *m, void *const *args, void *stream) {", P, kx.name)
    if #kx.params == 0 then s("  (void)args;") end
    s("  return %s_%s(%s);", P, kx.name, table.concat(unpacked, ", "))
    s("}")
    local prows = {}
    for _, r in ipairs(kx.rows) do
      prows[#prows + 1] = string.format('{"%s", "%s", %d, %d, %d, %d}', r.name, r.ctype, r.size, r.kind, r.arg, r.leaf)
    end
    if #prows == 0 then prows[1] = '{"", "", 0, 0, 0, 0}' end
    s("static const cutelua_aot_param %s_%s_params[] = {%s};", P, kx.name, table.concat(prows, ", "))
    kdesc_of[kx.name] = string.format('{"%s", %d, %s_%s_params, %s_%s_packed}', kx.name, #kx.params, P, kx.name, P,
      kx.name)
    s("")
    ::next_kernel::
  end
  for _, hx in ipairs(ex.entries) do
    if hx.host then kdesc_of[hx.name] = host_wrapper(s, P, hx) end
  end
  local kdescs = {}
  for i, e in ipairs(ex.entries) do kdescs[i] = kdesc_of[e.name] end
  s("static int %s_load_any(void **m, char *err, size_t errlen) { return %s_load((%s_module **)m, err, errlen); }", P, P,
    P)
  s("static void %s_unload_any(void *m) { %s_unload((%s_module *)m); }", P, P, P)
  s("static const cutelua_aot_kernel %s_kernel_descs[] = {%s};", P, table.concat(kdescs, ", "))
  s("static const cutelua_aot_module %s_desc = {CUTELUA_AOT_ABI, %s_meta, %d, %s_kernel_descs, %s_check,"
    .. " %s_load_any, %s_unload_any, %s_error_name};", P, P, #ex.entries, P, P, P, P, P)
  s("const cutelua_aot_module *%s_describe(void) { return &%s_desc; }", P, P)
  s("")
  -- the digest: loop bounds are constants here, never the (possibly altered) counts in the tables
  s("static uint64_t %s_desc_digest(uint64_t h) {", P)
  s("  const cutelua_aot_module *volatile desc_v = &%s_desc;", P)
  s("  const struct %s_image *volatile images_v = %s_images;", P, P)
  s("  const char *const *volatile names_v = %s_kernel_names;", P)
  s("  const char *const *volatile exports_v = %s_export_names;", P)
  s("  const unsigned *volatile smem_v = %s_dyn_smem;", P)
  s("  const cutelua_aot_module *d = desc_v;")
  s("  const struct %s_image *images = images_v;", P)
  s("  const char *const *names = names_v, *const *exports = exports_v;")
  s("  const unsigned *smem = smem_v;")
  s("  int j;")
  s("  h = %s_fnv_int(h, d->abi);", P)
  s("  h = %s_fnv_int(h, d->nkernels);", P)
  s("  h = %s_fnv(h, d->metadata, sizeof %s_meta);", P, P)
  for ki = 1, #ex.kernels do
    local k = ki - 1
    s("  h = %s_fnv_str(h, names[%d]);", P, k)
    s("  h = %s_fnv_str(h, exports[%d]);", P, k)
    s("  h = %s_fnv_int(h, (long long)smem[%d]);", P, k)
  end
  for ki, kx in ipairs(ex.entries) do
    local k = ki - 1
    s("  h = %s_fnv_str(h, d->kernels[%d].name);", P, k)
    s("  h = %s_fnv_int(h, d->kernels[%d].nparams);", P, k)
    if #kx.rows > 0 then
      s("  for (j = 0; j < %d; j++) {", #kx.rows)
      s("    const cutelua_aot_param *p = &d->kernels[%d].params[j];", k)
      s("    h = %s_fnv_str(h, p->name);", P)
      s("    h = %s_fnv_str(h, p->ctype);", P)
      s("    h = %s_fnv_int(h, p->size);", P)
      s("    h = %s_fnv_int(h, p->kind);", P)
      s("    h = %s_fnv_int(h, p->arg);", P)
      s("    h = %s_fnv_int(h, p->leaf);", P)
      s("  }")
    end
  end
  s("  for (j = 0; j < %s_NIMAGES; j++) {", P)
  s("    h = %s_fnv_int(h, images[j].kernel);", P)
  s("    h = %s_fnv_str(h, images[j].arch);", P)
  s("    h = %s_fnv_int(h, images[j].major);", P)
  s("    h = %s_fnv_int(h, images[j].minor);", P)
  s("    h = %s_fnv_int(h, images[j].exact);", P)
  s("    h = %s_fnv_int(h, (long long)images[j].size);", P)
  s("  }")
  s("  return h;")
  s("}")
  s("")
  s("#ifdef CUTELUA_AOT_SHARED")
  s("/* the entry a shared library is found by (cutelua_aot_open, cute.aot.load) */")
  s("const cutelua_aot_module *cutelua_aot_entry(void) { return &%s_desc; }", P)
  s("#endif")
  return header, table.concat(S, "\n") .. "\n"
end

-- ---------------------------------------------------------------------------
-- Building

local function shell_quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

local function cuda_home()
  local candidates = { os.getenv("CUDA_HOME"), os.getenv("CUDA_PATH"), "/usr/local/cuda" }
  for _, d in ipairs(candidates) do
    if d and d ~= "" then
      local f = io.open(d .. "/include/cuda.h")
      if f then
        f:close()
        return d
      end
    end
  end
  err.raise("export: cuda.h not found (looked in $CUDA_HOME/include, $CUDA_PATH/include, /usr/local/cuda/include); "
    .. "set CUDA_HOME to the CUDA toolkit")
end

local function run(cmd, what)
  local p = io.popen(cmd .. " 2>&1; echo \"__exit=$?\"")
  local out = p:read("*a")
  p:close()
  local code = tonumber(out:match("__exit=(%d+)%s*$"))
  out = out:gsub("__exit=%d+%s*$", "")
  if code ~= 0 then err.raise("export: %s failed (exit %s):\n%s\n%s", what, tostring(code), cmd, out) end
  return out
end

local function cuda_version()
  local v = compiler.versions()
  local cv = v:match("nvJitLink (%d+%.%d+)") or v:match("driver (%d+%.%d+)") or "13.0"
  return cv
end

--- Exports kernels (see the module comment); returns the paths written:
-- {header = , object = , source = , shared = (when spec.shared)}.
-- @param spec {name =, dir =, prefix =, arch =, shared =, kernels = {...}} (see above)
-- @return a table of the paths written
-- @usage cute.export({name = "vadd", dir = "out", arch = {"sm_80"}, kernels = {...}})
function M.export(spec)
  if type(spec) ~= "table" then err.raise("cute.export: expected a table {name = , dir = , kernels = {...}}") end
  local name = c_ident(spec.name, "name")
  local prefix = c_ident(spec.prefix or name, "prefix")
  local dir = spec.dir or "."
  local archs = spec.arch or spec.archs or { compiler.options({}):get("arch") }
  if type(archs) == "string" then archs = { archs } end
  if type(spec.kernels) ~= "table" or #spec.kernels == 0 then
    err.raise("cute.export: kernels = {{name = , kernel = , args = , grid = , block = }, ...} is missing")
  end
  -- kernels: the module's kernels (each with its cubins), host functions' launches included;
  -- entries: what the module exports (kernels and host functions), in the spec's order
  local kernels, entries, seen = {}, {}, {}
  local function add(kx)
    if seen[kx.name] then err.raise("cute.export: two kernels are called %s", kx.name) end
    seen[kx.name] = true
    kernels[#kernels + 1] = kx
  end
  for i, e in ipairs(spec.kernels) do
    if type(e) == "table" and e.host ~= nil then
      local hx, steps = collect_host(e, archs, i)
      if seen[hx.name] then err.raise("cute.export: two kernels are called %s", hx.name) end
      for _, kx in ipairs(steps) do add(kx) end
      seen[hx.name] = true
      entries[#entries + 1] = hx
    else
      local kx = collect(e, archs, i)
      add(kx)
      entries[#entries + 1] = kx
    end
  end
  for i, kx in ipairs(kernels) do kx.index = i - 1 end
  -- one cubin per (kernel, arch): each kernel is its own module (its own
  -- specialisation); loading picks the best arch for each
  local images = {}
  for ki, kx in ipairs(kernels) do
    for ai, arch in ipairs(archs) do
      local major, minor, exact = arch_cc(arch)
      images[#images + 1] = { kernel = ki, arch = arch, major = major, minor = minor, exact = exact,
        cubin = kx.per_arch[ai].cubin }
    end
  end
  local version = ffi.string(require("cute._c").host.version())
  local cuda = cuda_version()
  local meta = { "cutelua-aot 2", "cutelua " .. version, "cuda " .. cuda, "prefix " .. prefix,
    "archs " .. table.concat(archs, " ") }
  for _, kx in ipairs(kernels) do meta[#meta + 1] = string.format("kernel %s ir-sha256 %s", kx.name, kx.ir_hash) end
  -- each kernel's argument count, and each IntTuple argument's profile (what loaders check a call's tuples against)
  for _, e in ipairs(entries) do
    local enames = e.host and e.names or e.kernel.names
    meta[#meta + 1] = string.format("args %s %d", e.name, #e.specs)
    for i, sp in ipairs(e.specs) do
      if sp.kind == "tuple" then
        meta[#meta + 1] = string.format("tuple %s %d %s %s", e.name, i, enames[i] or ("arg" .. i), sp.profile)
      end
    end
  end
  -- what a loader that does not run the object's code needs (cute.aot.load of a .o):
  -- the module's kernels, where each cubin is in the object, and each entry's
  -- parameters and launches (kernel, arguments and geometry as Lua expressions)
  for i, kx in ipairs(kernels) do
    meta[#meta + 1] = string.format("module-kernel %d %s %s %d", i - 1, kx.kernel.name, kx.name, kx.dyn_smem)
  end
  for i, im in ipairs(images) do
    meta[#meta + 1] = string.format("image %d %s %d %d %d %s_cubin_%d %d %s", im.kernel - 1, im.arch, im.major,
      im.minor, im.exact and 1 or 0, prefix, i, #im.cubin, compiler.sha256(im.cubin))
  end
  local function launch_lines(e, n, kx, grid, block, smem_lua, cluster, args)
    local g = { grid.lua[1], grid.lua[2], grid.lua[3], block.lua[1], block.lua[2], block.lua[3], smem_lua }
    local complete = true
    for j = 1, 7 do complete = complete and g[j] ~= nil end
    local c = cluster or { 1, 1, 1 }
    meta[#meta + 1] = string.format("launch %s %d %d %d %d %d %s", e.name, n, kx.index, c[1], c[2], c[3],
      complete and table.concat(g, ";") or "-")
    for _, a in ipairs(args) do
      meta[#meta + 1] = a.tma and string.format("karg %s %d tma %s", e.name, n, a.name)
        or string.format("karg %s %d c %s %s", e.name, n, a.lua, a.ctype)
    end
  end
  for _, e in ipairs(entries) do
    for _, p in ipairs(e.params) do
      meta[#meta + 1] = string.format("param %s %s %d %d %d %s", e.name, p.name, PARAM_KINDS[p.what] or 3,
        p.arg - 1, (p.leaf or 1) - 1, p.ctype)
    end
    if e.host then
      for n, st in ipairs(e.steps) do
        local args = {}
        for q, x in ipairs(st.exprs) do args[q] = { lua = x.lua, ctype = x.ctype } end
        launch_lines(e, n, st.kx, st.grid, st.block, st.smem_lua, st.cluster, args)
      end
    else
      local args = {}
      for q, a in ipairs(e.kinfo) do args[q] = a.tma and a or { lua = a.name, ctype = a.ctype } end
      launch_lines(e, 1, e, e.grid, e.block, e.smem_lua, e.cluster, args)
    end
  end
  meta = table.concat(meta, "\n") .. "\n"
  local parts = { meta }
  for _, im in ipairs(images) do parts[#parts + 1] = im.cubin end
  for _, e in ipairs(entries) do e.rows = param_rows(e) end
  desc_digest_parts(kernels, entries, images, meta, parts)
  local sum = fnv1a64(parts)
  local ex = { name = name, prefix = prefix, archs = archs, kernels = kernels, entries = entries, images = images,
    version = version,
    cuda = cuda, cuda_major = tonumber(cuda:match("^(%d+)")), meta = meta,
    checksum_hex = string.format("%08x%08x", tonumber(bit.rshift(sum, 32)), tonumber(bit.band(sum, 0xffffffff))) }
  local header, source = generate(ex)
  os.execute("mkdir -p " .. shell_quote(dir))
  local paths = { header = dir .. "/" .. name .. ".h", source = dir .. "/" .. name .. ".c",
    object = dir .. "/" .. name .. ".o" }
  local function write(path, text)
    local f, e = io.open(path, "w")
    if not f then err.raise("cute.export: %s", e) end
    f:write(text)
    f:close()
  end
  write(paths.header, header)
  write(paths.source, source)
  local cc = spec.cc or os.getenv("CC") or "cc"
  local inc = cuda_home() .. "/include"
  run(string.format("%s -std=c99 -O2 -fPIC -Wall -Wextra -I%s -I%s -c %s -o %s", cc, shell_quote(inc),
    shell_quote(dir), shell_quote(paths.source), shell_quote(paths.object)), "compiling " .. paths.source)
  if spec.shared then
    paths.shared = dir .. "/" .. name .. ".so"
    local home = cuda_home()
    run(string.format("%s -std=c99 -O2 -fPIC -shared -DCUTELUA_AOT_SHARED -I%s -I%s %s -o %s -L%s/lib64 -L%s/lib64/stubs"
      .. " -lcuda", cc, shell_quote(inc), shell_quote(dir), shell_quote(paths.source), shell_quote(paths.shared),
      shell_quote(home), shell_quote(home)), "linking " .. paths.shared)
    local ebuf = ffi.new("char[1024]")
    if aot_c().seal(paths.shared, ebuf, 1024) ~= 0 then err.raise("cute.export: %s", ffi.string(ebuf)) end
  end
  return paths
end

-- ---------------------------------------------------------------------------
-- Loading an exported shared library into Lua

pcall(ffi.cdef, [[
typedef struct cutelua_aot_param {
  const char *name; const char *ctype; int size; int kind; int arg; int leaf;
} cutelua_aot_param;
typedef struct cutelua_aot_kernel {
  const char *name; int nparams; const cutelua_aot_param *params;
  int (*launch_packed)(void *module, void *const *args, void *stream);
} cutelua_aot_kernel;
typedef struct cutelua_aot_module {
  int abi; const char *metadata; int nkernels; const cutelua_aot_kernel *kernels;
  int (*check)(char *err, size_t errlen);
  int (*load)(void **module, char *err, size_t errlen);
  void (*unload)(void *module);
  const char *(*error_name)(int code);
} cutelua_aot_module;
const cutelua_aot_module *cutelua_aot_entry(void);
]])
pcall(ffi.cdef, [[
void *dlopen(const char *file, int mode);
void *dlsym(void *handle, const char *name);
char *dlerror(void);
]])
-- Bound now: the first use of an ffi.C symbol looks it up with dlsym, which
-- clears the error dlopen left for dlerror (which then returned NULL).
local dlopen, dlsym, dlerror = ffi.C.dlopen, ffi.C.dlsym, ffi.C.dlerror

local Loaded = {}
Loaded.__index = function(m, k)
  local v = rawget(Loaded, k)
  if v then return v end
  local kern = rawget(m, "_kernels")[k]
  if kern then return function(...) return m:call(k, ...) end end
  return nil
end

local function leaves_of(x, out)
  if type(x) == "table" then for j = 1, #x do leaves_of(x[j], out) end else out[#out + 1] = x end
  return out
end

-- The leaves of an IntTuple argument (typed scalars are leaves), in order.
local function tuple_leaves(x, out)
  if type(x) == "table" and getmetatable(x) ~= require("cute.dtype").Scalar then
    for j = 1, #x do tuple_leaves(x[j], out) end
  else
    out[#out + 1] = x
  end
  return out
end

-- ---------------------------------------------------------------------------
-- Object files (.o): read without running any of their code

pcall(ffi.cdef, [[
typedef struct CuteElf64Ehdr {
  uint8_t ident[16]; uint16_t type, machine; uint32_t version; uint64_t entry, phoff, shoff;
  uint32_t flags; uint16_t ehsize, phentsize, phnum, shentsize, shnum, shstrndx;
} CuteElf64Ehdr;
typedef struct CuteElf64Shdr {
  uint32_t name, type; uint64_t flags, addr, offset, size; uint32_t link, info; uint64_t addralign, entsize;
} CuteElf64Shdr;
typedef struct CuteElf64Sym { uint32_t name; uint8_t info, other; uint16_t shndx; uint64_t value, size; } CuteElf64Sym;
]])

local MAX_OBJECT = 2 ^ 30

-- The symbols of an ELF64 relocatable object: name -> the bytes it defines.
local function object_symbols(path, data)
  local function bad(why, ...) err.raise("cute.aot.load: %s is not an object file exported by cutelua: " .. why, path, ...) end
  local n = #data
  if n < 64 or data:sub(1, 4) ~= "\127ELF" then bad("not an ELF file") end
  local p = ffi.cast("const uint8_t *", data)
  local eh = ffi.new("CuteElf64Ehdr")
  ffi.copy(eh, p, 64)
  if eh.ident[4] ~= 2 or eh.ident[5] ~= 1 then bad("not a 64-bit little-endian ELF file") end
  if eh.type ~= 1 then bad("ELF type %d, not a relocatable object (1)", eh.type) end
  if eh.shentsize ~= 64 or eh.shnum == 0 then bad("no section headers") end
  local shoff, shnum = tonumber(eh.shoff), eh.shnum
  if shoff > n or shnum * 64 > n - shoff then bad("its section headers lie outside the file (%d bytes): truncated", n) end
  local sh = {}
  for i = 0, shnum - 1 do
    local h = ffi.new("CuteElf64Shdr")
    ffi.copy(h, p + shoff + i * 64, 64)
    local off, size = tonumber(h.offset), tonumber(h.size)
    if h.type ~= 8 and (off > n or size > n - off) then -- (8: SHT_NOBITS, no bytes in the file)
      bad("section %d lies outside the file (%d bytes): truncated", i, n)
    end
    sh[i] = { type = h.type, offset = off, size = size, link = h.link, entsize = tonumber(h.entsize) }
  end
  local syms = {}
  for i = 0, shnum - 1 do
    local st = sh[i]
    if st.type == 2 then -- SHT_SYMTAB
      local strs = sh[st.link]
      if not strs or strs.type ~= 3 then bad("its symbol table has no string table") end
      for j = 0, math.floor(st.size / 24) - 1 do
        local sym_ = ffi.new("CuteElf64Sym")
        ffi.copy(sym_, p + st.offset + j * 24, 24)
        if sym_.name < strs.size then
          local nm = ffi.string(p + strs.offset + sym_.name)
          local sec = sh[sym_.shndx]
          if nm ~= "" and sec and sec.type ~= 8 and sym_.shndx ~= 0 and sym_.shndx < 0xff00 then
            local off, size = tonumber(sym_.value), tonumber(sym_.size)
            if off <= sec.size and size <= sec.size - off then
              syms[nm] = { offset = sec.offset + off, size = size, global = bit.rshift(sym_.info, 4) == 1 }
            end
          end
        end
      end
    end
  end
  return syms
end

--- Reads an object file made by cute.export (its `.o`) without running any of
-- its code: its symbols give the metadata (checked against its SHA-256) and
-- the cubins (each checked against the SHA-256 the metadata gives); the
-- metadata gives each entry's parameters and launches. Needs no GPU.
-- @param path the object file's path
-- @return a table: prefix, metadata, kernels (the module's: name, fn, dyn_smem, images {arch, major, minor,
--   exact, cubin}), entries (by name: params, nargs, tuples, launches)
-- @usage local o = cute.aot.read_object("out/vadd.o"); print(o.prefix)
function M.read_object(path)
  if type(path) ~= "string" then err.raise("cute.aot.read_object: expected a path, got %s", type(path)) end
  local f, e = io.open(path, "rb")
  if not f then err.raise("cute.aot.load: cannot read %s", tostring(e)) end
  local size = f:seek("end")
  if not size or size > MAX_OBJECT then
    f:close()
    err.raise("cute.aot.load: %s is larger than %d MiB or not a regular file", path, MAX_OBJECT / 2 ^ 20)
  end
  f:seek("set", 0)
  local data = f:read("*a") or ""
  f:close()
  local syms = object_symbols(path, data)
  local prefix
  for nm, sy in pairs(syms) do
    local pfx = nm:match("^(.+)_describe$")
    if pfx and sy.global and syms[pfx .. "_meta_sha256"] then prefix = pfx end
  end
  if not prefix then
    err.raise("cute.aot.load: %s has no <prefix>_describe and <prefix>_meta_sha256: not an object exported by "
      .. "cutelua (or one exported by an older cutelua: export it again)", path)
  end
  local function bytes(nm)
    local sy = syms[nm]
    if not sy then err.raise("cute.aot.load: %s lacks the symbol %s: export it again", path, nm) end
    return data:sub(sy.offset + 1, sy.offset + sy.size)
  end
  local sha = bytes(prefix .. "_meta_sha256"):match("^(%x+)%z")
  local meta = bytes(prefix .. "_meta"):match("^(.-)%z")
  if not sha or not meta or compiler.sha256(meta) ~= sha then
    err.raise("cute.aot.load: %s: the embedded metadata was altered (its SHA-256 is not the one the object gives): "
      .. "export it again", path)
  end
  local out = { prefix = prefix, metadata = meta, kernels = {}, entries = {}, path = path }
  local function entry(nm)
    local en = out.entries[nm]
    if not en then
      en = { name = nm, params = {}, tuples = {}, launches = {} }
      out.entries[nm] = en
    end
    return en
  end
  for line in meta:gmatch("[^\n]+") do
    local w = line:match("^(%S+)")
    if w == "module-kernel" then
      local i, fn, nm, smem = line:match("^module%-kernel (%d+) (%S+) (%S+) (%d+)$")
      out.kernels[tonumber(i) + 1] = { fn = fn, name = nm, dyn_smem = tonumber(smem), images = {} }
    elseif w == "image" then
      local ki, arch, major, minor, exact, symn, sz, h = line:match(
        "^image (%d+) (%S+) (%d+) (%d+) (%d) (%S+) (%d+) (%x+)$")
      local kx = out.kernels[tonumber(ki) + 1]
      if not kx then err.raise("cute.aot.load: %s: an image of an unknown kernel", path) end
      local cubin = bytes(symn):sub(1, tonumber(sz))
      if #cubin ~= tonumber(sz) or compiler.sha256(cubin) ~= h then
        err.raise("cute.aot.load: %s: the %s cubin of kernel %s was altered: export it again", path, arch, kx.name)
      end
      kx.images[#kx.images + 1] = { arch = arch, major = tonumber(major), minor = tonumber(minor), exact = exact == "1",
        cubin = cubin }
    elseif w == "args" then
      local nm, n = line:match("^args (%S+) (%d+)$")
      entry(nm).nargs = tonumber(n)
    elseif w == "tuple" then
      local nm, i, pn, prof = line:match("^tuple (%S+) (%d+) (%S+) (%S+)$")
      entry(nm).tuples[tonumber(i)] = { name = pn, profile = prof }
    elseif w == "param" then
      local nm, pn, kind, a, leaf, ct = line:match("^param (%S+) (%S+) (%d+) (%d+) (%d+) (.+)$")
      local ps = entry(nm).params
      ps[#ps + 1] = { name = pn, kind = tonumber(kind), arg = tonumber(a) + 1, leaf = tonumber(leaf) + 1, ctype = ct }
    elseif w == "launch" then
      local nm, n, ki, cx, cy, cz, geo = line:match("^launch (%S+) (%d+) (%d+) (%d+) (%d+) (%d+) (%S.*)$")
      entry(nm).launches[tonumber(n)] = { kernel = tonumber(ki) + 1, cluster = { tonumber(cx), tonumber(cy),
        tonumber(cz) }, geometry = geo ~= "-" and geo or nil, args = {} }
    elseif w == "karg" then
      local nm, n, how, rest = line:match("^karg (%S+) (%d+) (%S+) (.+)$")
      local l = entry(nm).launches[tonumber(n)]
      if how == "tma" then
        l.args[#l.args + 1] = { tma = rest }
      else
        local lua, ct = rest:match("^(%S+) (.+)$")
        l.args[#l.args + 1] = { lua = lua, ctype = ct }
      end
    end
  end
  if #out.kernels == 0 then
    err.raise("cute.aot.load: %s has no kernel descriptions in its metadata: exported by an older cutelua; export it "
      .. "again", path)
  end
  return out
end

-- Compiles a launch's geometry (Lua expressions of the parameters' names:
-- integers, + - *, cdiv and cmod truncating as C does, min, max) into a
-- function of the parameter values.
local GEO_HELPERS = {
  cdiv = function(a, b)
    if b == 0 then err.raise("launch geometry: division by zero") end
    local q = a / b
    return q >= 0 and math.floor(q) or math.ceil(q)
  end,
  cmod = function(a, b)
    if b == 0 then err.raise("launch geometry: division by zero") end
    return math.fmod(a, b)
  end,
  min = math.min, max = math.max,
}
local function geometry_fn(geo, path)
  if not geo:match("^[%w_%s%(%)%+%-%*,;]+$") then
    err.raise("cute.aot.load: %s: a launch geometry it cannot compute (%s)", path, geo)
  end
  local exprs = {}
  for x in geo:gmatch("[^;]+") do exprs[#exprs + 1] = x end
  if #exprs ~= 7 then err.raise("cute.aot.load: %s: a launch geometry of %d parts", path, #exprs) end
  local chunk, e = loadstring("return " .. table.concat(exprs, ", "), "=(launch geometry)")
  if not chunk then err.raise("cute.aot.load: %s: a launch geometry that does not parse: %s", path, e) end
  return function(vals)
    setfenv(chunk, setmetatable({}, { __index = function(_, k)
      local v = GEO_HELPERS[k] or vals[k]
      if v == nil then err.raise("launch geometry: unknown name %s", tostring(k)) end
      return v
    end }))
    return chunk()
  end
end

M._geometry_fn = geometry_fn -- (for tests)

local Obj = {}
Obj.__index = function(m, k)
  local v = rawget(Obj, k)
  if v then return v end
  if rawget(m, "_entries")[k] then return function(...) return m:call(k, ...) end end
  return nil
end

-- The values of an entry's C parameters from a call's arguments (its
-- kernel's own arguments, or the flat C parameters): an array of Lua values.
local function param_values(name, k, args)
  local tensor = require "cute.tensor"
  local nlogical = k.nargs or 0
  if not k.nargs then for _, p in ipairs(k.params) do nlogical = math.max(nlogical, p.arg) end end
  if #args ~= nlogical and #args ~= #k.params then
    err.raise("%s: %d arguments; it takes %d (or its %d C parameters)", name, #args, nlogical, #k.params)
  end
  local logical = #args == nlogical
  local tleaves = {}
  if logical then
    -- each IntTuple argument must have the profile the kernel was exported for
    local kargs = require "cute.kernel_args"
    for i, t in pairs(k.tuples) do
      local what = string.format("%s: argument '%s' (#%d)", name, t.name, i)
      local a = args[i]
      if type(a) ~= "table" or not require("cute.int_tuple").is_tuple(a) then
        err.raise("%s must be an IntTuple of profile %s, got %s", what, t.profile, tostring(a))
      end
      local prof = kargs.tuple_profile(a, what)
      if prof ~= t.profile then
        err.raise("%s is an IntTuple of profile %s; the exported kernel takes %s (? marks a run-time leaf and its "
          .. "dtype, numbers are baked in): export a specialisation for that profile", what, prof, t.profile)
      end
      tleaves[i] = tuple_leaves(a, {})
    end
  end
  local out = {}
  for j, p in ipairs(k.params) do
    local v
    if logical then
      local a = args[p.arg]
      if require("cute.nvgpu.tma").is_tma_atom(a) then
        -- a TMA atom: its tensor's address, extents and strides (the wrapper encodes the descriptor)
        if a.tensor == nil then
          err.raise("%s: argument %d is a TMA atom made from a fake tensor; make it from the device tensor", name, p.arg)
        end
        a = a.tensor
      end
      if p.kind == 5 then
        if not (type(a) == "cdata" and ffi.istype("CuteTmaDesc", a)) then
          err.raise("%s: argument %d must be a TMA descriptor (cute.tma_descriptor)", name, p.arg)
        end
        v = ffi.cast("const void *", a)
      elseif p.kind == 0 then
        if not tensor.is_device_tensor(a) then err.raise("%s: argument %d must be a device tensor", name, p.arg) end
        v = a:data_ptr()
      elseif p.kind == 1 then
        v = leaves_of(L.shape(a.layout), {})[p.leaf]
      elseif p.kind == 2 then
        v = leaves_of(L.stride(a.layout), {})[p.leaf]
      elseif p.kind == 4 then
        v = tleaves[p.arg][p.leaf].value
      else
        v = type(a) == "table" and a.value or a
      end
    else
      v = args[j]
      if tensor.is_device_tensor(v) then v = v:data_ptr() end
      if type(v) == "cdata" and ffi.istype("CuteTmaDesc", v) then v = ffi.cast("const void *", v) end
      if type(v) == "table" and getmetatable(v) == require("cute.dtype").Scalar then v = v.value end
    end
    out[j] = v
  end
  return out
end

M._param_values = param_values -- (for tests)

-- Loads an object file (M.load of a .o): its cubins through the runtime,
-- its entries launched by the runtime as the C wrappers launch them.
local function load_object(path)
  local o = M.read_object(path)
  local runtime = require("cute.runtime")
  local info = runtime.device_info()
  local major, minor = info.compute_capability[1], info.compute_capability[2]
  local fns = {}
  for i, kx in ipairs(o.kernels) do
    local best, have = nil, {}
    for _, im in ipairs(kx.images) do
      have[#have + 1] = im.arch
      local ok = im.major == major and (im.exact and im.minor == minor or (not im.exact and im.minor <= minor))
      if ok and (not best or im.minor > best.minor or (im.minor == best.minor and im.exact)) then best = im end
    end
    if not best then
      err.raise("cute.aot.load: %s: no cubin of kernel %s for this GPU: the module has %s; the device is sm_%d%d "
        .. "(compute capability %d.%d)", path, kx.name, table.concat(have, ", "), major, minor, major, minor)
    end
    local mod = runtime.load_module(best.cubin, kx.name)
    fns[i] = { kernel = mod:kernel(kx.fn), module = mod, dyn_smem = kx.dyn_smem }
  end
  for nm, en in pairs(o.entries) do
    for _, l in ipairs(en.launches) do
      l.geo = l.geometry and geometry_fn(l.geometry, path)
      for _, a in ipairs(l.args) do
        -- a kernel argument is a parameter's name or a literal number (a host function's constant)
        if not a.tma then
          local lit = tonumber(a.lua)
          if lit then
            a.fn = function() return lit end
          elseif a.lua:match("^[%a_][%w_]*$") then
            local pn = a.lua
            a.fn = function(vals) return vals[pn] end
          else
            err.raise("cute.aot.load: %s: a kernel argument it cannot compute (%s)", path, a.lua)
          end
        end
      end
    end
    en.name = nm
  end
  return setmetatable({ _entries = o.entries, _fns = fns, metadata = o.metadata, path = path, prefix = o.prefix,
    object = true }, Obj)
end

-- The entry `name` of a loaded module or object (an error listing the others
-- when it has none), the call's arguments, and the stream of a last {stream = s}.
local function entry_call(path, entries, name, ...)
  local en = entries[name]
  if not en then
    local names = {}
    for n in pairs(entries) do names[#names + 1] = n end
    table.sort(names)
    err.raise("%s has no kernel %s (it has: %s)", path, tostring(name), table.concat(names, ", "))
  end
  local args = { ... }
  local stream
  if type(args[#args]) == "table" and getmetatable(args[#args]) == nil and args[#args].stream ~= nil then
    stream = table.remove(args).stream
  end
  return en, args, stream
end

--- Calls an entry of a loaded object file: arguments as the Lua kernel (or
-- host function) took them, or its flat C parameters; a last table {stream = s}.
-- @param name the entry's name
-- @param ... its arguments
-- @usage m:call("vadd_f32", a, b, c)
function Obj:call(name, ...)
  local en, args, stream = entry_call(self.path, self._entries, name, ...)
  local vals = param_values(name, en, args)
  local byname = {}
  for j, p in ipairs(en.params) do
    local v = vals[j]
    -- extents, strides, scalars as Lua numbers (for the geometry); pointers keep their 64 bits
    if type(v) == "cdata" and p.kind ~= 0 and p.kind ~= 5 then v = tonumber(v) end
    byname[p.name] = v
  end
  local runtime = require("cute.runtime")
  local cfgc = ffi.new("RtLaunch")
  for n, l in ipairs(en.launches) do
    if not l.geo then
      err.raise("%s: launch %d has a geometry that only the compiled object computes: load the .so", name, n)
    end
    local gx, gy, gz, bx, by, bz, smem = l.geo(byname)
    local fk = self._fns[l.kernel]
    if gx > 0 and gy > 0 and gz > 0 then
      if bx <= 0 or by <= 0 or bz <= 0 then err.raise("%s: launch %d has a block of (%d, %d, %d)", name, n, bx, by, bz) end
      local argv = ffi.new("void *[?]", math.max(#l.args, 1))
      local cells = {}
      for q, a in ipairs(l.args) do
        if a.tma then
          err.raise("%s: the kernel takes a TMA descriptor, which the exported wrapper encodes: load the .so", name)
        end
        local cell = ffi.new((a.ctype == "_Bool" and "bool" or a.ctype) .. "[1]")
        cell[0] = a.fn(byname)
        cells[q] = cell
        argv[q - 1] = cell
      end
      runtime.internal.fill_launch({ grid = { gx, gy, gz }, block = { bx, by, bz },
        smem = math.max(smem, fk.dyn_smem), cluster = (l.cluster[1] * l.cluster[2] * l.cluster[3] > 1) and l.cluster
        or nil, stream = stream }, cfgc)
      local rt = require("cute._c").rt
      local rc = rt.launch(fk.kernel.fn, cfgc, argv)
      if rc ~= 0 then runtime.internal.check(rc) end
      local _ = cells
    end
  end
end

--- Loads an exported shared library (cute.export{..., shared = true}), or an
-- exported object file (a relocatable ELF file: read without running its code,
-- see cute.aot.read_object; its kernels launched through the runtime): checks
-- its metadata, loads its cubin on the current device; returns a module whose
-- kernels are called by name: m.kernel_name(args...) with the kernel's
-- arguments (device tensors for tensors, numbers for scalars) or the flat C
-- parameters, and an optional last {stream = s}.
-- @param path the shared library's or object file's path
-- @return a module: its kernels by name
-- @usage local m = cute.aot.load("out/vadd.so"); m.vadd_f32(a, b, c)
function M.load(path)
  if type(path) ~= "string" then err.raise("cute.aot.load: expected the path of an exported library, got %s", type(path)) end
  -- a relocatable ELF object (type 1) is an exported .o, whatever its name
  local f = io.open(path, "rb")
  local head = f and f:read(18) or ""
  if f then f:close() end
  if path:match("%.o$") or (#head == 18 and head:sub(1, 4) == "\127ELF" and head:byte(17) == 1 and head:byte(18) == 0) then
    return load_object(path)
  end
  -- the file first: a truncated or altered library would crash the process inside dlopen
  local ebuf = ffi.new("char[1024]")
  if aot_c().check_file(path, ebuf, 1024) ~= 0 then err.raise("cute.aot.load: %s", ffi.string(ebuf)) end
  local runtime = require("cute.runtime")
  local dev = runtime.current_device() -- makes the device's context current
  -- dlopen, never closed: ffi.load's library would be unloaded at exit before
  -- the module's finalizer calls into it
  local lib = dlopen(path, 2) -- RTLD_NOW
  if lib == nil then
    local e = dlerror()
    err.raise("cute.aot.load: cannot load %s: %s", path, e ~= nil and ffi.string(e) or "dlopen failed")
  end
  local entry = dlsym(lib, "cutelua_aot_entry")
  if entry == nil then err.raise("cute.aot.load: %s has no cutelua_aot_entry: not a cute.export library", path) end
  local desc = ffi.cast("const cutelua_aot_module *(*)(void)", entry)()
  if desc == nil then
    err.raise("cute.aot.load: %s: its cutelua_aot_entry returned no descriptor: not a cute.export library", path)
  end
  if desc.abi ~= 1 then err.raise("cute.aot.load: %s has descriptor ABI %d; this cutelua reads 1", path, desc.abi) end
  local rc = desc.check(ebuf, 1024)
  if rc ~= 0 then err.raise("cute.aot.load: %s", ffi.string(ebuf)) end
  local mptr = ffi.new("void *[1]")
  rc = desc.load(mptr, ebuf, 1024)
  if rc ~= 0 then err.raise("cute.aot.load: %s", ffi.string(ebuf)) end
  local kernels = {}
  for i = 0, desc.nkernels - 1 do
    local kd = desc.kernels[i]
    local params = {}
    for j = 0, kd.nparams - 1 do
      local p = kd.params[j]
      params[j + 1] = { name = ffi.string(p.name), ctype = ffi.string(p.ctype), kind = p.kind, arg = p.arg + 1,
        leaf = p.leaf + 1 }
    end
    kernels[ffi.string(kd.name)] = { desc = kd, params = params, tuples = {} }
  end
  -- the argument counts and the IntTuple profiles, from the (checked) metadata
  for line in ffi.string(desc.metadata):gmatch("[^\n]+") do
    local kn, n = line:match("^args (%S+) (%d+)$")
    if kn and kernels[kn] then kernels[kn].nargs = tonumber(n) end
    local tk, ti, tname, prof = line:match("^tuple (%S+) (%d+) (%S+) (%S+)$")
    if tk and kernels[tk] then kernels[tk].tuples[tonumber(ti)] = { name = tname, profile = prof } end
  end
  local m = setmetatable({ _lib = lib, _desc = desc, _module = mptr[0], _kernels = kernels,
    metadata = ffi.string(desc.metadata), path = path }, Loaded)
  -- unloaded by the GC, unless the context it was loaded in is gone (a reset
  -- or a fault): its handles are stale then
  local rt, gen = require("cute._c").rt, require("cute._c").rt.generation(dev)
  ffi.gc(mptr, function()
    if rt.generation(dev) == gen and not runtime.device_lost(dev) then desc.unload(mptr[0]) end
  end)
  m._keep = mptr
  return m
end

--- Calls an exported kernel: arguments as the Lua kernel took them (device
-- tensors, numbers), or its flat C parameters; a last table {stream = s}.
function Loaded:call(name, ...)
  local k, args, stream = entry_call(self.path, self._kernels, name, ...)
  local vals = param_values(name, k, args)
  local values = ffi.new("uint64_t[?]", math.max(#k.params, 1))
  local ptrs = ffi.new("void *[?]", math.max(#k.params, 1))
  for j, p in ipairs(k.params) do
    local cell = ffi.cast(p.ctype == "_Bool" and "bool *" or (p.ctype .. " *"), values + (j - 1))
    cell[0] = vals[j]
    ptrs[j - 1] = values + (j - 1)
  end
  local rc = k.desc.launch_packed(self._module, ptrs,
    require("cute.runtime").internal.stream_handle(stream, name .. ": stream"))
  if rc ~= 0 then
    err.raise("%s: launch failed: %s", name, ffi.string(self._desc.error_name(rc)))
  end
end


return M
