--- cute.lib.common: pieces the kernels of cute.lib share.
--
-- Everything here runs while a kernel is traced: plain Lua helpers that emit
-- the same code a kernel author would write by hand.
local cute = require "cute"

local M = {}

--- Two 16-bit values (bf16, f16) as one 32-bit register, lo in the low half: the
-- pairs that mma.sync's and stmatrix's registers and 4-byte stores take.
-- @param lo the value of the low half
-- @param hi the value of the high half
-- @return a u32 value
-- @usage local r = common.pack2(acc[0], acc[1]):bitcast(cute.i32)
function M.pack2(lo, hi)
  local l = lo:bitcast(cute.u16):to(cute.u32)
  return hi:bitcast(cute.u16):to(cute.u32):shl(16):bor(l)
end

-- (plain Lua through the preprocessor: cute.preprocess)
local block_reduce = cute.preprocess(function(v, op, identity, threads)
  local warps = threads / 32
  v = cute.warp_reduce_shuffle(v, op)
  if warps == 1 then return v end
  local dt = require("cute.trace.core").type_of(v).dtype
  local red = cute.make_smem_tensor(dt, cute.make_layout({ 32 }), 16)
  local tid = cute.thread_idx().x
  local lane, warp = tid:band(31), tid:shr(5)
  if lane == 0 then red[warp] = v end
  cute.sync_threads()
  -- every warp reduces the per-warp results (so every thread ends with the total)
  local w = cute.where(lane < warps, red[lane:band(31)], identity)
  w = cute.warp_reduce_shuffle(w, op, 32)
  cute.sync_threads() -- the array is reused by a later call
  return w
end)

--- Reduces v over the whole block (threads threads, a multiple of 32) with
-- op(a, b); every thread gets the result. identity: op's neutral element for
-- the lanes that hold nothing. Uses warp shuffles and one shared array per call.
-- @param v this thread's value
-- @param op a function(a, b) combining two values
-- @param identity op's neutral element
-- @param threads the block's threads (a multiple of 32)
-- @return the reduction (a value, in every thread)
-- @usage local total = common.block_reduce(v, common.add, 0, 256)
function M.block_reduce(v, op, identity, threads) return block_reduce(v, op, identity, threads) end

--- a + b: the sum as an op for block_reduce.
-- @param a a value
-- @param b a value
-- @return a + b
-- @usage common.block_reduce(v, common.add, 0, threads)
function M.add(a, b) return a + b end
M.max = cute.max

--- A tiled global -> shared copy of a rows x cols tile by `threads` threads:
-- `major` "k" (cols contiguous) or "mn" (rows contiguous), `vec` elements a
-- copy along the contiguous mode (cp.async from 32 bits, 16-byte copies
-- bypassing L1; plain copies below 32 bits).
-- @param dt the elements' dtype
-- @param threads the threads of the copy
-- @param rows the tile's rows
-- @param cols the tile's columns
-- @param major "k" or "mn"
-- @param vec elements a copy
-- @return a tiled copy
-- @usage local cpA = common.tiled_g2s(cute.bf16, 128, 128, 32, "k", 8)
function M.tiled_g2s(dt, threads, rows, cols, major, vec)
  local bits = vec * dt.bits
  local catom
  if bits >= 32 then
    catom = cute.make_copy_atom(cute.nvgpu.cpasync.CopyG2SOp(bits == 128 and "global" or "always"), dt,
      { num_bits_per_copy = bits })
  else
    catom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), dt, { num_bits_per_copy = bits })
  end
  if major == "k" then
    local tc = math.min(cols / vec, threads)
    return cute.make_tiled_copy_tv(catom, cute.make_layout({ threads / tc, tc }, { tc, 1 }),
      cute.make_layout({ 1, vec }))
  end
  local tr = math.min(rows / vec, threads)
  return cute.make_tiled_copy_tv(catom, cute.make_layout({ tr, threads / tr }), cute.make_layout({ vec, 1 }))
end

--- Raises for a field of opts.config that `keys` does not name: a misspelt
-- field would otherwise be ignored without a word. The message names the
-- field, the closest known one and all of them.
-- @param api the caller's name for the message ("cute.gemm")
-- @param config opts.config (nil: nothing to check)
-- @param keys the fields the kernel reads
-- @param whose the kernel's name for the message ("the mma.sync kernel's")
-- @usage common.check_config_keys("cute.gemm", opts.config, { "bm", "bn" }, "the mma.sync kernel's")
function M.check_config_keys(api, config, keys, whose)
  if config == nil then return end
  local err = require "cute._err"
  if type(config) ~= "table" then err.raise("%s: opts.config must be a table, got %s", api, type(config)) end
  local known = {}
  for _, k in ipairs(keys) do known[k] = true end
  for key in pairs(config) do
    if not known[key] then
      local sorted = {}
      for i, k in ipairs(keys) do sorted[i] = k end
      table.sort(sorted)
      err.raise("%s: opts.config.%s is not one of %s fields%s (they are: %s)", api, tostring(key), whose,
        err.did_you_mean(tostring(key), sorted), table.concat(sorted, ", "))
    end
  end
end

--- Whether two device tensors' memory overlaps: the bytes from each one's
-- first element to the end of its span (its layout's cosize). False for fake
-- tensors, and for anything but device tensors.
-- @param a a device tensor
-- @param b a device tensor
-- @treturn bool
-- @usage if common.overlap(C, A) then ... end
function M.overlap(a, b)
  local T = require "cute.tensor"
  if not (T.is_device_tensor(a) and T.is_device_tensor(b)) or a.fake or b.fake then return false end
  if a.buffer ~= b.buffer and a.buffer.device ~= b.buffer.device then return false end
  local pa, pb = a:data_ptr(), b:data_ptr()
  return pa < pb + b:cosize() * b.dtype.bytes and pb < pa + a:cosize() * a.dtype.bytes
end

--- Raises when an output a kernel writes overlaps an input other threads read
-- (the result would depend on the order the tiles run in: a silent wrong
-- answer): outs and ins are lists of {tensor, name}; a pair in `same_ok`
-- ({out name .. "=" .. in name = true}) may be the very same view (same address
-- and layout: each tile reads its own part before it writes it).
-- @param api the caller's name for the message
-- @param outs the outputs
-- @param ins the inputs
-- @param same_ok optional: the pairs that may coincide exactly
-- @usage common.check_no_overlap("cute.gemm", {{C, "C"}}, {{A, "A"}, {B, "B"}})
function M.check_no_overlap(api, outs, ins, same_ok)
  for _, o in ipairs(outs) do
    for _, i in ipairs(ins) do
      local a, b = o[1], i[1]
      if M.overlap(a, b) then
        local identical = a:data_ptr() == b:data_ptr() and a.layout == b.layout and a.dtype == b.dtype
        if not (identical and same_ok and same_ok[o[2] .. "=" .. i[2]]) then
          require("cute._err").raise("%s: %s overlaps %s in memory: the kernel writes %s while other threads still "
            .. "read %s, so the result would depend on their order; give %s memory of its own", api, o[2], i[2],
            o[2], i[2], o[2])
        end
      end
    end
  end
end

--- opts.arch, checked against the compiler's target table: nil stays nil,
-- a name the table has is returned, anything else raises naming the targets.
-- @param api the caller's name for the message ("cute.gemm")
-- @param arch opts.arch
-- @return the target's name, or nil
-- @usage local arch = common.check_arch("cute.gemm", opts.arch)
function M.check_arch(api, arch)
  if arch == nil then return nil end
  local row, why = require("cute.compiler").target(arch)
  if not row then require("cute._err").raise("%s: opts.arch: %s", api, why) end
  return arch
end

--- A config's wait_ns (the pipelines' suspend-time hint, cute.pipeline's
-- suspend_ns): nil or false for none (returned as nil), else a whole number of
-- nanoseconds, checked.
-- @param v the value given
-- @param what the field's name for the message ("attention_sm90: config.wait_ns")
-- @return the hint, or nil
-- @usage cfg.wait_ns = common.wait_ns(cfg.wait_ns, "cute.gemm: gemm_sm90's wait_ns")
function M.wait_ns(v, what)
  if v == nil or v == false then return nil end
  if type(v) ~= "number" or v < 0 or v % 1 ~= 0 or v > 2 ^ 31 - 1 then
    require("cute._err").raise("%s is %s, expected a whole number of nanoseconds from 0 (or false: none)", what,
      tostring(v))
  end
  return v
end

--- The contents of opts.config as a string (keys sorted), or nil when it
-- holds something else than numbers, strings, booleans and flat lists of
-- them: the part of a plan cache's key that keys a config by value (the
-- caller may change the table between calls).
-- @param cfg opts.config
-- @return the string, or nil
-- @usage local k = common.config_key({ bm = 128, stages = 2 }) -- 'bm="128";stages="2"'
function M.config_key(cfg)
  if type(cfg) ~= "table" then return nil end
  local keys = {}
  for key in pairs(cfg) do
    if type(key) ~= "string" then return nil end
    keys[#keys + 1] = key
  end
  table.sort(keys)
  local parts = {}
  for i, key in ipairs(keys) do
    local v = cfg[key]
    if type(v) == "table" then
      local items = {}
      for j, x in pairs(v) do
        if type(j) ~= "number" or j ~= math.floor(j) or j < 1 or j > #v then return nil end
        local tx = type(x)
        if tx ~= "number" and tx ~= "string" and tx ~= "boolean" then return nil end
        items[j] = tostring(x)
      end
      v = "{" .. table.concat(items, ",") .. "}"
    elseif type(v) ~= "number" and type(v) ~= "string" and type(v) ~= "boolean" then
      return nil
    end
    parts[i] = key .. "=" .. string.format("%q", tostring(v))
  end
  return table.concat(parts, ";")
end

-- the identities of ident(): weak keys, so an object's entry goes with it
local idents, next_ident = setmetatable({}, { __mode = "k" }), 0

--- A number for an object (a tensor, a function) that no other live object
-- gets, for plan caches' keys: a key string must name an object without
-- holding it (a tensor's tostring names its layout, not its identity).
-- @param x a table, function or cdata
-- @return a whole number
-- @usage local k = "#" .. common.ident(opts.bias)
function M.ident(x)
  local id = idents[x]
  if not id then
    next_ident = next_ident + 1
    id = next_ident
    idents[x] = id
  end
  return id
end

--- The part of a 1-D tensor x (contiguous) that one thread moves, in a block
-- tile of `vec * threads * unroll` elements: thread t owns `unroll` vectors
-- of `vec` elements, each next to thread t-1's (coalesced). Returns the
-- thread's slice of the tile (shape (vec, unroll)), the index of its first
-- element in x, and the tile's size.
-- @param x a contiguous 1-D Tensor
-- @param block the index of the block tile
-- @param tid the thread's index in the block
-- @param vec the elements of one vector
-- @param threads the block's threads
-- @param unroll the vectors a thread moves
-- @return the slice (vec, unroll), the index of its first element in x, the tile's size
-- @usage local s, first, tile = common.thread_slice_1d(x, chunk, tid, 4, 256, 4)
function M.thread_slice_1d(x, block, tid, vec, threads, unroll)
  local tile = vec * threads * unroll
  local t = cute.local_tile(x, { tile }, { block })
  local tv = cute.composition(t, cute.make_layout({ { vec, threads }, unroll }, { { 1, vec }, vec * threads }))
  return tv[{ { cute._, tid }, cute._ }], block * tile + tid * vec, tile
end

--- Index (in x) of element (v, u) of a thread slice from thread_slice_1d.
-- @param first the first index, from thread_slice_1d
-- @param v the element in the vector
-- @param u the vector
-- @param vec the elements of one vector
-- @param threads the block's threads
-- @return the index in x
-- @usage local j = common.slice_index(first, v, u, vec, THREADS)
function M.slice_index(first, v, u, vec, threads) return first + v + u * vec * threads end

return M
