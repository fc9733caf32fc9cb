--- cute.npy: NumPy's .npy files, read into and written from tensors.
--
--   local h = cute.load_npy("x.npy")          -- a host tensor (h:to_device() for the GPU)
--   cute.save_npy("y.npy", t)                 -- a device or host tensor
--
-- The format is NumPy's (numpy/lib/format.py, "NPY format" versions 1.0,
-- 2.0 and 3.0): the magic "\x93NUMPY", a version, a header length, a Python
-- dict literal {'descr': ..., 'fortran_order': ..., 'shape': (...)}, then the
-- elements. numpy's shape (d0, d1, ...) is the tensor's shape in the same
-- order, so numpy's a[i, j] is the tensor's element (i, j): C order loads as
-- the "row" layout, Fortran order as the "col" layout (CuTe's default).
--
-- dtypes: b1 (bool), i1 i2 i4 i8, u1 u2 u4 u8, f2 (f16), f4, f8, in either
-- byte order (big-endian files are swapped on load; files are written
-- little-endian). NumPy has no bf16, fp8 or tf32: those are written as f4
-- (exact: every such value is an f32), or with {raw = true} as their bits
-- (u2, u1); load_npy(path, {dtype = cute.bf16}) reads the bits back from u2
-- (u1 for fp8), and converts other files' values (one rounding).
local ffi = require "ffi"
local err = require "cute._err"
local dtype = require "cute.dtype"
local L = require "cute.layout"
local it = require "cute.int_tuple"
local tensor = require "cute.tensor"
local rt = require("cute._c").rt
local T = tensor.internal

local M = {}

local MAGIC = "\147NUMPY"

-- C stdio, so that elements move between files and host arrays without Lua
-- strings (which stop at 2 GiB).
local C = ffi.C
pcall(ffi.cdef, "typedef struct FILE FILE;")
pcall(ffi.cdef, [[
FILE *fopen(const char *path, const char *mode);
size_t fread(void *ptr, size_t size, size_t n, FILE *f);
size_t fwrite(const void *ptr, size_t size, size_t n, FILE *f);
int fclose(FILE *f);
char *strerror(int errnum);
]])
pcall(ffi.cdef, "long ftell(FILE *f); int fseek(FILE *f, long offset, int whence);")

local function os_error() return ffi.string(C.strerror(ffi.errno())) end

-- A FILE * closed by the GC when an error leaves it open.
local function open(path, mode, what)
  local f = C.fopen(path, mode)
  if f == nil then err.raise("%s: cannot open %s: %s", what, path, os_error()) end
  return ffi.gc(f, C.fclose)
end

local function close(f)
  ffi.gc(f, nil)
  return C.fclose(f) == 0
end

-- Up to n bytes of a file, as a string.
local function read_string(f, n)
  local buf = ffi.new("char[?]", math.max(n, 1))
  return ffi.string(buf, C.fread(buf, 1, n, f))
end

-- numpy's type letter and size -> dtype name, and back.
local FROM_DESCR = {
  b1 = "bool", i1 = "i8", i2 = "i16", i4 = "i32", i8 = "i64", u1 = "u8", u2 = "u16", u4 = "u32", u8 = "u64",
  f2 = "f16", f4 = "f32", f8 = "f64",
}
local TO_DESCR = {}
for k, v in pairs(FROM_DESCR) do TO_DESCR[v] = k end
TO_DESCR.tf32 = "f4" -- stored as an f32 bit pattern

-- The dtypes numpy lacks, written as f4 or (raw) as their bits; and the
-- dtype of those bits.
local RAW = { bf16 = "u2", e4m3 = "u1", e5m2 = "u1" }
local RAW_BITS = { bf16 = "u16", e4m3 = "u8", e5m2 = "u8" }

-- ---------------------------------------------------------------------------
-- Reading

local function le_uint(s, i, n)
  local v = 0
  for k = n - 1, 0, -1 do v = v * 256 + s:byte(i + k) end
  return v
end

-- The header dict of an open .npy file, read up to the data: descr,
-- fortran_order, shape.
local function parse_header(f, path)
  local s = read_string(f, 10)
  if #s < 10 or s:sub(1, 6) ~= MAGIC then
    err.raise("load_npy: %s is not a .npy file (it does not start with \\x93NUMPY)", path)
  end
  local major, minor = s:byte(7), s:byte(8)
  local hlen
  if major == 1 then
    hlen = le_uint(s, 9, 2)
  elseif major == 2 or major == 3 then
    s = s .. read_string(f, 2)
    if #s < 12 then err.raise("load_npy: %s: the header is truncated", path) end
    hlen = le_uint(s, 9, 4)
  else
    err.raise("load_npy: %s: .npy format version %d.%d is not supported (1.0, 2.0 and 3.0 are)", path, major, minor)
  end
  local h = read_string(f, hlen)
  if #h < hlen then err.raise("load_npy: %s: the header is truncated", path) end
  if h:find("'descr'%s*:%s*%[") then
    err.raise("load_npy: %s: structured dtypes (descr %s) are not supported; save one field per file", path,
      h:match("'descr'%s*:%s*(%b[])") or "a list")
  end
  local descr = h:match("'descr'%s*:%s*'([^']*)'")
  local fortran = h:match("'fortran_order'%s*:%s*(%a+)")
  local shape_text = h:match("'shape'%s*:%s*%(([^)]*)%)")
  if not descr or not fortran or not shape_text then
    err.raise("load_npy: %s: the header %s lacks 'descr', 'fortran_order' or 'shape'", path, h:gsub("%s+$", ""))
  end
  if fortran ~= "True" and fortran ~= "False" then
    err.raise("load_npy: %s: fortran_order is %s, not True or False", path, fortran)
  end
  local shape = {}
  for d in shape_text:gmatch("[^,%s]+") do
    local n = tonumber((d:gsub("L$", "")))
    if not n or n < 0 or n ~= math.floor(n) then err.raise("load_npy: %s: bad extent %s in the shape", path, d) end
    shape[#shape + 1] = n
  end
  return descr, fortran == "True", shape
end

-- descr -> dtype, and whether the bytes need swapping.
local function dtype_of_descr(descr, path)
  local order, code = descr:match("^([<>|=]?)(%a%d+)$")
  local name = code and FROM_DESCR[code]
  if not name then
    local what = ({ c = "complex numbers", O = "Python objects", U = "unicode strings", S = "byte strings",
      V = "raw void data", M = "datetimes", m = "timedeltas" })[descr:match("^[<>|=]?(%a)") or ""]
    err.raise("load_npy: %s: the dtype %q (%s) is not supported; cutelua reads b1, i1..i8, u1..u8, f2, f4, f8", path,
      descr, what or "unknown")
  end
  local dt = dtype.get(name)
  return dt, order == ">" and dt.bytes > 1
end

local function byteswap(p, count, width)
  for i = 0, count - 1 do
    local b = p + i * width
    for k = 0, width / 2 - 1 do b[k], b[width - 1 - k] = b[width - 1 - k], b[k] end
  end
end

-- The layout of a numpy shape and order.
local function layout_of(shape, fortran)
  if #shape == 0 then return L.make_layout(1) end
  if #shape == 1 then return L.make_layout(shape[1]) end
  if fortran then return L.make_layout(shape) end
  return L.make_layout(shape, it.suffix_product(shape))
end

-- Values of one dtype's host storage converted to another dtype (through
-- double, cutelua's host conversions); raises on a value that does not fit.
local function convert(src, from, to, n, path)
  local d = T.host_array("double", n)
  rt.to_doubles(d, src, from.code, n)
  local out = T.host_array(to.storage, n)
  local bad = rt.from_doubles(out, to.code, d, n)
  if bad ~= 0 then
    err.raise("load_npy: %s: the value %s at index %d does not fit %s", path, tostring(d[tonumber(bad) - 1]),
      tonumber(bad) - 1, to.name)
  end
  return out
end

--- Reads a .npy file into a host tensor (cute.host_tensor: `data`, `dtype`,
-- `layout`; h[{i, j}], h:to_table(), h:to_device()). numpy's shape is its
-- shape; C order gives the "row" layout, Fortran order the "col" layout; a
-- 0-d array gives a tensor of one element. opts.dtype: the tensor's dtype
-- (the file's values converted, or the bits of a u2/u1 file for bf16 and fp8).
-- @param path the file's path
-- @param opts optional: {dtype = the tensor's dtype}
-- @return a host tensor
-- @usage local h = cute.load_npy("x.npy")
function M.load_npy(path, opts)
  if type(path) ~= "string" then err.raise("load_npy: expected a path, got %s", type(path)) end
  local f = open(path, "rb", "load_npy")
  local descr, fortran, shape = parse_header(f, path)
  local dt, swap = dtype_of_descr(descr, path)
  local n = 1
  for i, d in ipairs(shape) do
    if d == 0 then
      err.raise("load_npy: %s: the shape (%s) has an empty dimension %d; cutelua's tensors have positive extents",
        path, table.concat(shape, ", "), i - 1)
    end
    n = n * d
  end
  local bytes = n * dt.bytes
  -- (the data the file holds, checked before the header's shape allocates anything)
  local at = tonumber(C.ftell(f))
  local size = at >= 0 and C.fseek(f, 0, 2) == 0 and tonumber(C.ftell(f)) or -1
  if size >= 0 and (C.fseek(f, at, 0) ~= 0 or size - at < bytes) then
    close(f)
    err.raise("load_npy: %s: %d bytes of data; the header's shape (%s) of %s needs %.0f", path, math.max(0, size - at),
      table.concat(shape, ", "), descr, bytes)
  end
  local data = T.host_array(dt.storage, n)
  local got = tonumber(C.fread(data, 1, bytes, f))
  close(f)
  if got < bytes then
    err.raise("load_npy: %s: %d bytes of data; the header's shape (%s) of %s needs %d", path, got,
      table.concat(shape, ", "), descr, bytes)
  end
  if swap then byteswap(ffi.cast("uint8_t *", data), n, dt.bytes) end
  local want = opts and opts.dtype and dtype.get(opts.dtype)
  if want and want ~= dt then
    if RAW_BITS[want.name] == dt.name then -- the bits, as {raw = true} wrote them (the same storage type)
      return tensor.host_tensor(want, layout_of(shape, fortran), nil, data)
    end
    data, dt = convert(data, dt, want, n, path), want
  end
  return tensor.host_tensor(dt, layout_of(shape, fortran), nil, data)
end

-- ---------------------------------------------------------------------------
-- Writing

-- The header for a descr, an order and a shape: the dict padded with spaces
-- and a newline so that the data starts at a multiple of 64 bytes (as numpy
-- writes it); version 1.0, or 2.0 for a header beyond 65535 bytes.
local function header(descr, fortran, shape)
  local dims = {}
  for i, d in ipairs(shape) do dims[i] = string.format("%d", d) end
  local tuple = #dims == 1 and ("(" .. dims[1] .. ",)") or ("(" .. table.concat(dims, ", ") .. ")")
  local dict = string.format("{'descr': '%s', 'fortran_order': %s, 'shape': %s, }", descr,
    fortran and "True" or "False", tuple)
  local function build(prefix_len, len_bytes, version)
    local total = prefix_len + #dict + 1
    local pad = (64 - total % 64) % 64
    local body = dict .. string.rep(" ", pad) .. "\n"
    local len = #body
    local lb = {}
    for k = 1, len_bytes do
      lb[k] = string.char(len % 256)
      len = math.floor(len / 256)
    end
    return MAGIC .. string.char(version, 0) .. table.concat(lb) .. body
  end
  local h = build(10, 2, 1)
  if #h - 10 > 65535 then h = build(12, 4, 2) end
  return h
end

-- Whether (shape, stride) leaves are compact with the first mode fastest.
local function compact(shape, stride, order)
  local want = 1
  for _, i in ipairs(order) do
    if shape[i] ~= 1 and stride[i] ~= want then return false end
    want = want * shape[i]
  end
  return true
end

--- Writes a device tensor (copied to the host first) or a host tensor to a
-- .npy file. The shape written is the tensor's shape flattened to its
-- leaves (((2, 3), 4) is (2, 3, 4)), so numpy's a[i, j, k] is the element at
-- those coordinates. A compact column-major layout is written as is in
-- Fortran order, a compact row-major one in C order; any other layout
-- (holes, broadcasts, permuted modes) is gathered into Fortran order.
-- bf16, e4m3 and e5m2 are written as f4 (exact), or with opts.raw = true as
-- their bits (u2, u1); tf32 as f4.
-- @param path the file's path
-- @param t a device or host tensor
-- @param opts optional: {raw = true} writes bf16/fp8 as their bits
-- @return path
-- @usage cute.save_npy("x.npy", t)
function M.save_npy(path, t, opts)
  if type(path) ~= "string" then err.raise("save_npy: expected a path, got %s", type(path)) end
  if type(t) ~= "table" or not t.dtype or not t.layout then
    err.raise("save_npy: expected a device or host tensor, got %s", type(t) == "table" and "a table" or type(t))
  end
  if tensor.is_device_tensor(t) then
    if t.fake then err.raise("save_npy: a fake tensor has no memory") end
    t = t:to_host()
  end
  local dt, layout = t.dtype, t.layout
  local shape, stride = T.leaves(L.shape(layout)), T.leaves(L.stride(layout))
  local n, cosize = L.size(layout), L.cosize(layout)
  local forward, backward = {}, {}
  for i = 1, #shape do forward[i], backward[#shape + 1 - i] = i, i end
  local fortran, data
  if cosize == n and compact(shape, stride, backward) and #shape > 1 then
    fortran, data = false, t.data
  elseif cosize == n and compact(shape, stride, forward) then
    fortran, data = #shape > 1, t.data
  else
    fortran = #shape > 1
    data = T.host_array(dt.storage, n)
    local src = t.data
    T.each_offset(layout, function(i, off) data[i] = src[off] end)
  end
  local descr = TO_DESCR[dt.name]
  if RAW[dt.name] then
    if opts and opts.raw then
      descr = RAW[dt.name]
    else
      local d = T.host_array("double", n)
      rt.to_doubles(d, data, dt.code, n)
      local out = T.host_array("float", n)
      for i = 0, n - 1 do out[i] = d[i] end
      data, descr = out, "f4"
    end
  end
  if not descr then err.raise("save_npy: %s has no NumPy dtype", dt.name) end
  local bytes = n * ffi.sizeof(descr == "f4" and "float" or dt.storage)
  local f = open(path, "wb", "save_npy")
  local order = (descr == "b1" or descr:sub(2) == "1") and "|" or "<"
  local h = header(order .. descr, fortran, shape)
  local ok = C.fwrite(h, 1, #h, f) == #h and C.fwrite(data, 1, bytes, f) == bytes
  ok = close(f) and ok
  if not ok then err.raise("save_npy: writing %s failed: %s", path, os_error()) end
  return path
end

M.internal = {
  header = header, -- header(descr, fortran, shape): the bytes of a .npy header, for tests
}

return M
