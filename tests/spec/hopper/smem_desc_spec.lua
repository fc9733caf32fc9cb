-- Shared-memory layout atoms and GMMA matrix descriptors: the atoms against
-- the table of docs/notes/hopper-facts.md 2.4 and the byte swizzle of 2.2;
-- descriptors computed from tiled layouts against the PTX ISA's canonical
-- layouts (facts 2.3, written here in bytes) element by element, their bits
-- against the ISA's field positions (2.1), the per-k-block advance (2.5),
-- and the layouts no descriptor describes.
local cute = require "cute"
local bit = require "bit"
local ffi = require "ffi"
local wg = require "cute.nvgpu.warpgroup"

local FILE = "tests/spec/hopper/smem_desc_spec.lua"
local K, MN = wg.OperandMajorMode.K, wg.OperandMajorMode.MN

local function raises(f, ...)
  local ok, msg = pcall(f)
  assert.is_false(ok, "no error")
  local file, line = tostring(msg):match("^(.-):(%d+): ")
  assert.equal(FILE, file, msg)
  assert.equal(debug.getinfo(f, "S").linedefined, tonumber(line), msg)
  for i = 1, select("#", ...) do assert.truthy(msg:find((select(i, ...)), 1, true), msg) end
  return msg
end

-- facts 2.2: the physical byte of logical byte b under the 32B/64B/128B
-- swizzle (bits = 1, 2, 3): the 16-byte chunk index XORed with bits 7.. of b
local function sw_bytes(b, bits)
  if bits == 0 then return b end
  local mask = 2 ^ bits - 1
  return bit.bxor(b, bit.lshift(bit.band(bit.rshift(b, 7), mask), 4))
end

local SW_BITS = { INTER = 0, SW32 = 1, SW64 = 2, SW128 = 3 }
local TYPE_OF_BITS = { [0] = 0, 3, 2, 1 } -- PTX: 0 none, 1 128B, 2 64B, 3 32B
local KINDS = { "K_INTER", "K_SW32", "K_SW64", "K_SW128", "MN_INTER", "MN_SW32", "MN_SW64", "MN_SW128" }
local DTYPES = { cute.bf16, cute.f16, cute.tf32, cute.e4m3, cute.i8 }

-- the kind's major, swizzle bits and row width in bytes
local function kind_info(kind)
  local major, sw = kind:match("^(%a+)_(%w+)$")
  local b = SW_BITS[sw]
  return major, b, 16 * 2 ^ b
end

describe("shared-memory layout atoms", function()
  it("are the facts' atoms with the byte swizzle of the hardware", function()
    for _, kind in ipairs(KINDS) do
      local major, b, w = kind_info(kind)
      for _, dt in ipairs(DTYPES) do
        local e = dt.bytes
        local atom = wg.make_smem_layout_atom(wg.SmemLayoutAtomKind[kind], dt)
        local want = major == "K" and cute.make_layout({ 8, w / e }, { w / e, 1 })
          or cute.make_layout({ w / e, 8 }, { 1, w / e })
        assert.equal(tostring(want), tostring(atom.outer), kind .. " " .. dt.name)
        -- element (mn, k) sits at the swizzled byte of its unswizzled place
        for mn = 0, cute.size(atom, 0) - 1 do
          for k = 0, cute.size(atom, 1) - 1 do
            local logical = major == "K" and mn * w + k * e or k * w + mn * e
            assert.equal(sw_bytes(logical, b), atom({ mn, k }) * e, string.format("%s %s (%d,%d)", kind, dt.name,
              mn, k))
          end
        end
      end
    end
  end)

  it("are picked and tiled as CuTe DSL does", function()
    assert.equal(wg.SmemLayoutAtomKind.K_SW128, wg.get_smem_layout_atom_kind(K, cute.bf16, 64))
    assert.equal(wg.SmemLayoutAtomKind.K_SW64, wg.get_smem_layout_atom_kind(K, cute.bf16, 32))
    assert.equal(wg.SmemLayoutAtomKind.K_SW32, wg.get_smem_layout_atom_kind(K, cute.bf16, 48))
    assert.equal(wg.SmemLayoutAtomKind.K_INTER, wg.get_smem_layout_atom_kind(K, cute.bf16, 8))
    assert.equal(wg.SmemLayoutAtomKind.MN_SW128, wg.get_smem_layout_atom_kind(MN, cute.e4m3, 256))
    -- A K-major 128 x 64 bf16, 4 stages: 16 SW128 atoms down M, stages 16 KB apart
    local sA = wg.make_smem_layout_a(K, { 128, 256, 64 }, cute.bf16, 4)
    assert.equal("S<3,3,3> o 0 o (128,64,4):(64,1,8192)", tostring(sA))
    -- B MN-major 256 x 64 bf16: atoms (64 n x 8 k) down K first, then the next 64 n
    local sB = wg.make_smem_layout_b(MN, { 128, 256, 64 }, cute.bf16, 2)
    assert.equal("S<3,3,3> o 0 o ((64,4),64,2):((1,4096),64,16384)", tostring(sB))
    local ok, msg = pcall(wg.get_smem_layout_atom_kind, K, cute.bf16, 4)
    assert.is_false(ok)
    assert.truthy(msg:find("is not a multiple of 16 bytes: no atom fits", 1, true), msg)
  end)
end)

-- facts 2.3 in bytes: the canonical offset of (i, j) in one wgmma block,
-- from the descriptor's LBO and SBO, for element bytes e and row width w
local function canon_bytes(major, b, w, e, lbo, sbo, i, j)
  local T = 16 / e
  if major == "K" then
    if b == 0 then return (i % 8) * 16 + math.floor(i / 8) * sbo + (j % T) * e + math.floor(j / T) * lbo end
    return (i % 8) * w + math.floor(i / 8) * sbo + j * e
  end
  local W = w / e
  if b == 0 then return (i % T) * e + math.floor(i / T) * sbo + (j % 8) * 16 + math.floor(j / 8) * lbo end
  return (i % W) * e + math.floor(i / W) * lbo + (j % 8) * w + math.floor(j / 8) * sbo
end

-- the 64-bit descriptor of the ISA's field table, built with 64-bit integers
local function isa_bits(addr, lbo, sbo, base, layout_type)
  local v = ffi.new("uint64_t", bit.band(bit.rshift(addr, 4), 0x3FFF))
  v = bit.bor(v, bit.lshift(ffi.new("uint64_t", bit.band(bit.rshift(lbo, 4), 0x3FFF)), 16))
  v = bit.bor(v, bit.lshift(ffi.new("uint64_t", bit.band(bit.rshift(sbo, 4), 0x3FFF)), 32))
  v = bit.bor(v, bit.lshift(ffi.new("uint64_t", base), 49))
  v = bit.bor(v, bit.lshift(ffi.new("uint64_t", layout_type), 62))
  return v
end

local function as_u64(lo, hi) return ffi.new("uint64_t", hi) * 2 ^ 32 + ffi.new("uint64_t", lo) end

describe("GMMA descriptors from layouts", function()
  it("describe every atom kind and dtype tiled, element by element, with the ISA's bits", function()
    local cases = 0
    for _, kind in ipairs(KINDS) do
      local major, b, w = kind_info(kind)
      for _, dt in ipairs(DTYPES) do
        local e = dt.bytes
        if major == "K" or e == 2 then
          local atom = wg.make_smem_layout_atom(wg.SmemLayoutAtomKind[kind], dt)
          local am, ak = cute.size(atom, 0), cute.size(atom, 1)
          for _, mnt in ipairs { 64, 128, 256 } do
            for _, kmul in ipairs { 1, 2 } do
              for _, stages in ipairs { 1, 3 } do
                local kt = math.max(ak, 32 / e) * kmul
                local mn_block = math.max(64, am)
                if mnt % am == 0 and kt % ak == 0 and mnt % mn_block == 0 then
                  local lay = wg.tile_to_mma_shape(atom, { mnt, kt, stages }, major)
                  local d = wg.make_smem_desc(lay, dt, major, { mn = mn_block })
                  cases = cases + 1
                  local what = string.format("%s %s %dx%dx%d", kind, dt.name, mnt, kt, stages)
                  -- fields from the tile's geometry (atoms MN first for K-major, K first for MN-major)
                  assert.equal(TYPE_OF_BITS[b], d.layout_type, what)
                  assert.equal(0, d.base_offset)
                  if major == "K" then
                    assert.equal(b == 0 and 128 or 8 * w, d.sbo_bytes, what)
                    assert.equal(b == 0 and mnt * 16 or 16, d.lbo_bytes, what)
                  elseif b == 0 then
                    assert.equal(128, d.lbo_bytes, what)
                    assert.equal(kt * 16, d.sbo_bytes, what)
                  else
                    assert.equal(8 * w, d.sbo_bytes, what)
                    assert.equal(mn_block > w / e and kt * w or 16, d.lbo_bytes, what)
                  end
                  -- every element of every block, stage: the ISA's address (swizzled) is the layout's
                  local kinst = 32 / e
                  assert.equal(kt / kinst, d.k_blocks)
                  assert.equal(mnt / mn_block, d.mn_blocks)
                  for s = 0, stages - 1 do
                    for mb = 0, d.mn_blocks - 1 do
                      for kb = 0, d.k_blocks - 1 do
                        local start = d.start_bytes + d.mn_offsets_bytes[mb + 1] + d.k_offsets_bytes[kb + 1]
                          + d.stage_offsets_bytes[s + 1]
                        for i = 0, mn_block - 1, (mn_block > 64 and 3 or 1) do
                          for j = 0, kinst - 1 do
                            local addr = start + canon_bytes(major, b, w, e, d.lbo_bytes, d.sbo_bytes, i, j)
                            local got = lay({ mb * mn_block + i, kb * kinst + j, s }) * e
                            if sw_bytes(addr, b) ~= got then
                              error(string.format("%s: block (%d,%d,%d) element (%d,%d): ISA %d, layout %d", what,
                                mb, kb, s, i, j, sw_bytes(addr, b), got))
                            end
                          end
                        end
                      end
                    end
                  end
                  -- the words are the ISA's bits, with start address 0 and with an address
                  assert.equal(isa_bits(0, d.lbo_bytes, d.sbo_bytes, 0, d.layout_type), as_u64(d.lo, d.hi), what)
                  local lo, hi = d:words(0x1C400 + d.k_offsets_bytes[#d.k_offsets_bytes])
                  assert.equal(isa_bits(0x1C400 + d.k_offsets_bytes[#d.k_offsets_bytes], d.lbo_bytes, d.sbo_bytes,
                    0, d.layout_type), as_u64(lo, hi), what)
                end
              end
            end
          end
        end
      end
    end
    assert.is_true(cases >= 100, "cases: " .. cases)
  end)

  it("advance by the facts' per-k-block offsets", function()
    -- K-major SW128 bf16: +32 B per k16 inside the 128-byte row; a K tile of
    -- 128 is two column blocks, the second rows * 128 bytes further
    local d = wg.make_smem_desc(wg.make_smem_layout_a(K, { 128, 128, 128 }, cute.bf16), cute.bf16, K, { mn = 64 })
    local want = {}
    for kb = 0, 7 do want[kb + 1] = math.floor(kb * 32 / 128) * (128 * 128) + (kb * 32) % 128 end
    assert.same(want, d.k_offsets_bytes)
    assert.same({ 0, 64 * 128 }, d.mn_offsets_bytes)
    -- MN-major SW128 bf16: 16 K rows a wgmma = 2 SBO
    d = wg.make_smem_desc(wg.make_smem_layout_b(MN, { 64, 128, 64 }, cute.bf16, 2), cute.bf16, MN)
    assert.same({ 0, 2 * 1024, 4 * 1024, 6 * 1024 }, d.k_offsets_bytes)
    assert.same({ 0, 128 * 64 * 2 }, d.stage_offsets_bytes)
    assert.equal(8192, d.lbo_bytes) -- the second 64-wide N block, one 64 x 64 box further (GPU-verified value)
    assert.equal(1024, d.sbo_bytes)
    assert.equal(1024, d.align_bytes)
    -- a slice of stage 1, k-block 2 (a composed offset): the start moves, LBO/SBO do not
    local sA = wg.make_smem_layout_a(K, { 64, 64, 64 }, cute.bf16, 2)
    local slice = cute.slice_(sA, { cute._, cute._, 1 })
    local whole = wg.make_smem_desc(sA, cute.bf16, K)
    d = wg.make_smem_desc(slice, cute.bf16, K)
    assert.equal(whole.stage_offsets_bytes[2], d.start_bytes)
    assert.equal(whole.sbo_bytes, d.sbo_bytes)
    assert.matches("SmemDesc%(K%-major 128B: LBO 16 B %(unused%), SBO 1024 B", tostring(d))
  end)

  it("packs and unpacks the ISA's fields", function()
    local f = { start_address = 0x3FFF0, lbo_bytes = 0x10, sbo_bytes = 0x3FFF0, base_offset = 5, layout_type = 2 }
    local lo, hi = wg.encode_smem_desc(f)
    assert.equal(isa_bits(f.start_address, f.lbo_bytes, f.sbo_bytes, 5, 2), as_u64(lo, hi))
    assert.same(f, wg.decode_smem_desc(lo, hi))
    assert.is_true(lo < 2 ^ 32 and hi < 2 ^ 32)
    raises(function() local a = wg.encode_smem_desc { lbo_bytes = 24, sbo_bytes = 16, layout_type = 0 }; return a end,
      "lbo_bytes must be an integer in 0..262128 and a multiple of 16, got 24")
    raises(function() local a = wg.encode_smem_desc { lbo_bytes = 16, sbo_bytes = 2 ^ 18, layout_type = 1 }; return a
      end,
      "sbo_bytes must be an integer in 0..262128")
    raises(function() local a = wg.encode_smem_desc { lbo_bytes = 16, sbo_bytes = 16, layout_type = 4 }; return a end,
      "layout_type must be an integer in 0..3")
  end)

  it("refuse layouts no descriptor describes, saying why and which atom fits", function()
    -- a plain row-major 64 x 16 bf16 tile: 32-byte rows, unswizzled
    raises(function() local d = wg.make_smem_desc(cute.make_layout({ 64, 16 }, { 16, 1 }), cute.bf16, K); return d end,
      "is not a canonical K-major INTER layout: element (mn 1, k 0) is 16 elements from its block's start",
      "SmemLayoutAtomKind.K_SW32, bf16",
      "this layout keeps 32 bytes contiguous along K; that atom's rows are 32 bytes, swizzled with S<1,3,3>")
    -- padded rows
    raises(function() local d = wg.make_smem_desc(cute.make_layout({ 64, 64 }, { 72, 1 }), cute.bf16, K); return d end,
      "is not a canonical K-major INTER layout")
    -- the swizzle of another element size
    local bad = cute.make_composed_layout(cute.Swizzle(3, 4, 3), 0, cute.make_layout({ 64, 64 }, { 64, 1 }))
    raises(function() local d = wg.make_smem_desc(bad, cute.bf16, K); return d end,
      "the swizzle S<3,4,3> on bf16 elements is S<3,5,3> on bytes; wgmma's swizzles are S<1..3,4,3> on bytes "
      .. "(S<b,3,3> on bf16 elements)")
    -- the wrong major mode
    local sB = wg.make_smem_layout_b(MN, { 64, 128, 64 }, cute.bf16)
    raises(function() local d = wg.make_smem_desc(sB, cute.bf16, K); return d end,
      "is MN-major (MN contiguous) but OperandMajorMode.K was asked for")
    -- tf32 MN-major
    local tf = wg.tile_to_mma_shape(wg.make_smem_layout_atom("MN_SW128", cute.tf32), { 64, 32 }, MN)
    raises(function() local d = wg.make_smem_desc(tf, cute.tf32, MN); return d end,
      "wgmma reads tf32 operands K-major only")
    -- an N of 32 cannot be MN-major SW128 (64 wide): SW64 fits
    local n32 = wg.tile_to_mma_shape(wg.make_smem_layout_atom("MN_SW128", cute.bf16), { 64, 16 }, MN)
    raises(function() local d = wg.make_smem_desc(n32, cute.bf16, MN, { mn = 32 }); return d end,
      "an MN extent of 32 is not a multiple of the MN-major SW128 atom's 64", "MN_SW64")
    -- K extent not a wgmma K
    raises(function() local d = wg.make_smem_desc(cute.make_layout({ 64, 8 }, { 8, 1 }), cute.bf16, K); return d end,
      "a K extent of 8 is not a multiple of one wgmma's K (16 bf16 elements = 32 bytes)")
    -- LBO beyond the field: K INTER whose second K core matrix is 256 KiB away
    local far = cute.make_layout({ { 8, 2 }, { 8, 2 } }, { { 8, 64 }, { 1, 2 ^ 17 } })
    raises(function() local d = wg.make_smem_desc(far, cute.bf16, K); return d end,
      "the LBO of", "is 262144 bytes; the descriptor holds multiples of 16 bytes from 0 to 262128")
    -- a start that is not 16-byte aligned
    local off = cute.make_composed_layout(cute.Swizzle(3, 3, 3), 4, cute.make_layout({ 64, 64 }, { 64, 1 }))
    raises(function() local d = wg.make_smem_desc(off, cute.bf16, K); return d end,
      "starts at byte 8, not a multiple of 16")
    raises(function() local d = wg.make_smem_desc(cute.make_layout({ 64, 16 }), cute.f64, K); return d end,
      "wgmma operands are 8-, 16- or 32-bit elements, not f64")
  end)
end)
