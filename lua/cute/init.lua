--- cute: the cutelua namespace.
--
-- `local cute = require "cute"` gives CuTe's names in one table, as the CuTe
-- DSL does: the layout algebra (cute.make_layout, cute.composition, ...),
-- kernels, tensors, atoms. Modules are loaded on first use, so requiring
-- `cute` costs nothing until something is used. Submodules are reachable as
-- fields too (cute.layout, cute.int_tuple, ...).
local ffi = require "ffi"

local cute = {}

-- cutelua's modules are loaded once per Lua state, even when package.loaded
-- is reset (busted insulates each spec file that way): they hold state that
-- must not split (the trace in progress, the device, FFI metatypes that bind
-- one instance's methods for good). A searcher ahead of the others answers
-- from the first instance of every cute module.
do
  local reg = debug.getregistry()
  if not reg.cutelua_modules then
    local cache, on_load = {}, {}
    reg.cutelua_modules = cache
    reg.cutelua_on_load = on_load -- name -> function(module), called when the module is loaded
    local loaders = package.loaders
    table.insert(loaders, 1, function(name)
      if name ~= "cute" and name:sub(1, 5) ~= "cute." then return nil end
      local m = cache[name]
      if m ~= nil then return function() return m end end
      for i = 2, #loaders do
        local loader = loaders[i](name)
        if type(loader) == "function" then
          return function(...)
            local r = loader(...)
            if r == nil then r = package.loaded[name] end
            if r == nil then r = true end
            cache[name] = r
            if on_load[name] then on_load[name](r) end
            return r
          end
        end
      end
      return nil
    end)
  end
end

-- The namespace ------------------------------------------------------------------
--
-- cute.<name> is the field <name> of the module that EXPORTS lists it under,
-- loaded on first use of one of its names; cute.<submodule> is the module
-- cute.<submodule>. This table is the one place that decides what the
-- namespace holds: modules do not export anything themselves.
--
-- A name listed under several modules (each has its own version) is the
-- one of the module WINS names; init.lua refuses to load (and the spec
-- tests/spec/namespace_spec.lua fails) where such a name has no entry in WINS,
-- where WINS names a module that does not list it, or where a name is also a
-- submodule; a listed name its module does not have is an error when used.
local EXPORTS = {
  { "int_tuple", { "_", "X", "MAX_DEPTH", "MAX_RANK", "append", "ceil_div", "compact_col_major", "compact_order",
    "compact_row_major", "congruent", "crd2idx", "depth", "dice", "elem_leq", "elem_less", "flatten", "get",
    "group_modes", "has_underscore", "idx2crd", "is_int", "is_static", "is_tuple", "is_underscore", "prefix_product",
    "prepend", "pretty_str", "product", "product_each", "rank", "round_up", "select", "shape_div", "size",
    "suffix_product", "take", "unflatten", "weakly_congruent" } },
  { "swizzle", { "Swizzle", "is_swizzle", "make_swizzle" } },
  { "layout", { "LayoutLeft", "LayoutRight", "append", "coalesce", "complement", "composition", "cosize", "crd2idx",
    "depth", "dice", "filter", "filter_zeros", "flatten", "get", "group_modes", "idx2crd", "is_composed_layout",
    "is_layout", "is_static", "left_inverse", "make_basis_like", "make_composed_layout", "make_identity_layout",
    "make_layout", "make_ordered_layout", "prepend", "rank", "right_inverse", "select", "shape", "size", "slice_",
    "slice_and_offset", "stride", "take" } },
  { "layout_algebra", { "blocked_product", "flat_divide", "flat_product", "logical_divide", "logical_product",
    "max_common_layout", "max_common_vector", "raked_product", "tiled_divide", "tiled_product", "zipped_divide",
    "zipped_product" } },
  { "layout_tile", { "local_partition", "local_tile", "make_layout_tv", "tile_to_shape" } },
  { "layout_print", { "format_layout", "format_layout_tv", "max_cells", "print_layout", "print_layout_tv",
    "print_svg", "print_svg_tv", "svg_layout", "svg_tv", "latex_layout", "latex_tv", "print_latex",
    "print_latex_tv" } },
  { "dtype", { "BFloat16", "Boolean", "Float16", "Float32", "Float64", "Float8E4M3FN", "Float8E5M2", "Int16",
    "Int32", "Int64", "Int8", "TFloat32", "Uint16", "Uint32", "Uint64", "Uint8", "bf16", "bool", "e4m3", "e5m2",
    "f16", "f32", "f64", "i16", "i32", "i64", "i8", "tf32", "u16", "u32", "u64", "u8" } },
  { "runtime", { "Buffer", "Event", "Kernel", "Module", "Stream", "alloc", "current_device", "device_count",
    "device_info", "device_lost", "event", "generation", "gpu_available", "load_module", "load_module_file",
    "mem_info", "reset_device", "set_device", "set_sync_launches", "stream", "stream_from_handle", "synchronize",
    "tma_descriptor", "wrap" } },
  { "tensor", { "empty_like", "fake_tensor", "from_ptr", "host_tensor" } },
  { "npy", { "load_npy", "save_npy" } },
  { "dlpack", { "from_dlpack" } },
  { "atom", { "make_copy_atom", "make_mma_atom", "make_tiled_copy_A", "make_tiled_copy_B", "make_tiled_copy_C",
    "make_tiled_copy_tv", "make_tiled_mma", "mma_atoms", "nvgpu", "print_svg_copy", "print_svg_mma" } },
  -- in kernels
  -- the math functions (exp, sqrt, ...) are added below from C's list, the ops of the IR's MATH family
  { "trace.ops", { "abs", "and_", "asm", "bitcast", "fma", "fmod", "max", "min", "not_", "or_", "to", "where" } },
  { "random", { "philox4x32", "rand", "rand4", "rand_host", "randint", "randint4", "randn", "randn4" } },
  { "trace.control", { "break_", "continue_", "if_", "range", "return_", "var", "while_" } },
  { "pre.rt", { "dynamic", "range_constexpr" } },
  { "pre.source", { "preprocess" } },
  { "trace.sync", { "assert_", "atomic_add", "atomic_and", "atomic_cas", "atomic_dec", "atomic_exch", "atomic_inc",
    "atomic_max", "atomic_min", "atomic_or", "atomic_xor", "ballot", "barrier", "block_dim", "block_idx",
    "block_idx_in_cluster", "block_rank_in_cluster", "clock", "clock64", "cluster_dim", "cluster_idx",
    "cluster_shape", "fence", "globaltimer", "grid_dim", "lane_idx", "printf", "shuffle", "shuffle_down",
    "shuffle_up", "shuffle_xor", "smid", "sync_threads", "sync_warp", "thread_idx", "vote_all", "vote_any",
    "vote_uni", "warp_idx", "warp_reduce", "warp_reduce_shuffle" } },
  { "trace.tensor", { "composition", "copy", "cosize", "depth", "flat_divide", "local_partition", "local_tile",
    "logical_divide", "make_fragment", "make_fragment_like", "make_identity_tensor", "make_rmem_tensor",
    "make_rmem_tensor_like", "make_smem_tensor", "make_tensor", "opaque", "rank", "shape", "size", "smem_allocator",
    "stride", "tiled_divide", "zipped_divide" } },
  { "trace.atom", { "arch", "copy", "gemm" } },
  { "trace.tma", { "prefetch" } },
  { "kernel", { "constexpr", "launch_bounds", "set_checked", "static" } },
  { "func", { "func" } },
  { "aot", { "export" } },
  { "lib.gemm", { "gemm" } },
}

-- The math functions, one per op of the IR's MATH lowering family (C's list:
-- the op table in src/ir/ir_ops.h), as cute.trace.ops defines them.
do
  local buf = ffi.new("char[1024]")
  require("cute._c").ir.ops_in_family("MATH", buf, 1024)
  for _, entry in ipairs(EXPORTS) do
    if entry[1] == "trace.ops" then
      for name in ffi.string(buf):gmatch("%S+") do entry[2][#entry[2] + 1] = name end
    end
  end
end

-- Names several modules have. The rule: the version that takes the most
-- kinds of argument, since each falls back on the one below it: the tracer's
-- tensor functions take tensors (in kernels, and device tensors on the host)
-- and hand layouts and tuples to cute.layout's, which take layouts and hand
-- tuples to cute.int_tuple's.
local WINS = {
  -- tensors, layouts and tuples
  size = "trace.tensor", rank = "trace.tensor", depth = "trace.tensor",
  -- tensors and layouts
  shape = "trace.tensor", stride = "trace.tensor", cosize = "trace.tensor", composition = "trace.tensor",
  logical_divide = "trace.tensor", zipped_divide = "trace.tensor", tiled_divide = "trace.tensor",
  flat_divide = "trace.tensor", local_tile = "trace.tensor", local_partition = "trace.tensor",
  -- layouts and tuples
  append = "layout", prepend = "layout", crd2idx = "layout", idx2crd = "layout", dice = "layout", flatten = "layout",
  get = "layout", group_modes = "layout", is_static = "layout", select = "layout", take = "layout",
  -- with a copy atom first, copies with it; else trace.tensor's copy of tensors
  copy = "trace.atom",
  -- device tensors on the host; with a tiled MMA first, trace.atom's GEMM on fragments
  gemm = "lib.gemm",
}

-- Submodules reachable as cute.<name> (loaded on first use).
local SUBMODULES = { "_c", "_err", "aot", "arith", "atom", "autotune", "bench", "compiler", "cublas", "dlpack",
  "dtype", "int_tuple", "ir", "kernel", "layout", "layout_algebra", "layout_print", "layout_tile", "lib", "npy",
  "pipeline", "random", "runtime", "swizzle", "tensor", "testing" }

-- name -> module (nil, problems: a list of messages, when the tables
-- disagree: see above).
local function resolve(exports, wins, submodules, own)
  local where, listed, problems = {}, {}, {}
  local is_sub = {}
  for _, m in ipairs(submodules) do is_sub[m] = true end
  for _, entry in ipairs(exports) do
    local mod = entry[1]
    for _, name in ipairs(entry[2]) do
      local l = listed[name]
      if not l then
        l = {}
        listed[name] = l
      end
      l[#l + 1] = mod
    end
  end
  for name, mods in pairs(listed) do
    if #mods == 1 then
      where[name] = mods[1]
      if wins[name] ~= nil then
        problems[#problems + 1] = string.format("WINS gives cute.%s to %s, but only %s lists it", name,
          tostring(wins[name]), mods[1])
      end
    else
      local w = wins[name]
      for _, m in ipairs(mods) do
        if m == w then where[name] = w end
      end
      if not where[name] then
        problems[#problems + 1] = string.format("cute.%s is listed under %s: say in WINS which one it is%s", name,
          table.concat(mods, " and "), w and (" (WINS names " .. tostring(w) .. ", which does not list it)") or "")
      end
    end
    if is_sub[name] then
      problems[#problems + 1] = string.format("cute.%s is both a submodule and a name of %s", name,
        table.concat(mods, " and "))
    end
    if own and own[name] then
      problems[#problems + 1] = string.format("cute.%s is defined by init.lua and listed under %s", name,
        table.concat(mods, " and "))
    end
  end
  for name, w in pairs(wins) do
    if not listed[name] then
      problems[#problems + 1] = string.format("WINS gives cute.%s to %s, but no module lists it", name, tostring(w))
    end
  end
  if #problems > 0 then
    table.sort(problems)
    return nil, problems
  end
  return where
end

-- defined here (below)
local OWN = { version = true, libraries = true }

local WHERE, PROBLEMS = resolve(EXPORTS, WINS, SUBMODULES, OWN)
if not WHERE then error("cute: the namespace's export table is inconsistent:\n  " .. table.concat(PROBLEMS, "\n  ")) end
local IS_SUBMODULE = {}
for _, m in ipairs(SUBMODULES) do IS_SUBMODULE[m] = true end

setmetatable(cute, {
  __index = function(t, k)
    if IS_SUBMODULE[k] then
      local mod = require("cute." .. k)
      rawset(t, k, mod)
      return mod
    end
    local m = WHERE[k]
    if m == nil then return nil end
    local v = require("cute." .. m)[k]
    if v == nil then error(string.format("cute.%s: cute.%s has no %s (lua/cute/init.lua lists it)", k, m, k), 2) end
    rawset(t, k, v)
    return v
  end,
  -- for the REPL's Tab completion: every name, without loading anything
  __complete = function()
    local names = {}
    for _, m in ipairs(SUBMODULES) do names[#names + 1] = m end
    for k in pairs(WHERE) do names[#names + 1] = k end
    return names
  end,
  -- for tests/spec/namespace_spec.lua
  exports = { modules = EXPORTS, wins = WINS, submodules = SUBMODULES, own = OWN, where = WHERE, resolve = resolve },
})

--- The cutelua version string.
function cute.version() return ffi.string(require("cute._c").host.version()) end

--- Which CUDA libraries this process can load, and from where or why not.
-- @return a table {cuda = {ok = bool, path = ..., error = ...}, nvvm = ..., ...}
function cute.libraries()
  local host = require("cute._c").host
  local out = {}
  local path, msg = ffi.new("char[1024]"), ffi.new("char[4096]")
  for _, key in ipairs { "cuda", "nvvm", "nvjitlink", "cublas", "cublaslt" } do
    path[0], msg[0] = 0, 0
    local r = host.lib_status(key, path, 1024, msg, 4096)
    out[key] = r == 1 and { ok = true, path = ffi.string(path) } or { ok = false, error = ffi.string(msg) }
  end
  return out
end

-- Wiring between layers -------------------------------------------------------------
--
-- cute.tensor fills large tensors on the device with cute.lib.fill's kernel,
-- a library kernel layers above it (the library is written against this
-- namespace); the namespace, which stands above both, plugs it in when
-- cute.tensor is loaded (docs/architecture.md, "Lua modules"). cute.gemm
-- needs no plug: the table above gives it to cute.lib.gemm, which hands the
-- calls made in kernels down to cute.trace.atom.
local function device_fill(...) return require("cute.lib.fill").launch(...) end
local function on_tensor(m) m.set_device_fill(device_fill) end
do
  local reg = debug.getregistry()
  reg.cutelua_on_load["cute.tensor"] = on_tensor
  local loaded = reg.cutelua_modules["cute.tensor"] or package.loaded["cute.tensor"]
  if type(loaded) == "table" then on_tensor(loaded) end
end

-- The preprocessor (cute.pre) rewrites a kernel's source: from here on,
-- loadstring and load keep the text of the chunks they load by name (the
-- newest of each name, in the registry's cutelua_chunks; `cutelua -e` puts
-- its chunk there from C), so that kernels defined in them can be rewritten.
do
  local reg = debug.getregistry()
  local chunks = reg.cutelua_chunks
  if type(chunks) ~= "table" then
    chunks = {}
    reg.cutelua_chunks = chunks
  end
  if not reg.cutelua_load_kept then
    reg.cutelua_load_kept = true
    local loadstring0, load0 = loadstring, load
    rawset(_G, "loadstring", function(s, name, ...)
      if type(s) == "string" and type(name) == "string" then chunks[name] = s end
      return loadstring0(s, name, ...)
    end)
    rawset(_G, "load", function(s, name, ...)
      if type(s) == "string" and type(name) == "string" then chunks[name] = s end
      return load0(s, name, ...)
    end)
  end
end

debug.getregistry().cutelua_modules.cute = cute

return cute
