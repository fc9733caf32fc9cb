-- The layout algebra against the 1500 reference test vectors
-- (tests/data/layout/layout_vectors.json; README beside it). Each case is
-- its own test. A missing file fails, it never skips.
--
-- Layout results are compared exactly (shape and stride); where the form
-- may legitimately differ, point-wise through result_table:
--   * left_inverse of a non-surjective layout is not unique off the image
--     of its input (the cases carry a note): we check R(L(i)) == i.
-- Today every case matches exactly (the left inverses too); the fallbacks
-- are counted and reported, and a point-wise-only match fails the summary,
-- so a change of form cannot go unnoticed.
--
-- The four cases marked `quirk` record where the reference (pycute) differs
-- from C++ CuTe. cutelua follows C++ CuTe, so they are skipped here (the
-- spec prints how many and why) and the C++ behaviour is asserted instead
-- in the last block.
local cute = require "cute"
local json = require "dkjson"
local H = require "layout.helper"

local path = H.vectors_path()
local fh = io.open(path, "rb")
local data, decode_err
if fh then
  local text = fh:read("*a")
  fh:close()
  local pos
  data, pos, decode_err = json.decode(text, 1, json.null)
  if not data then decode_err = tostring(decode_err) .. " at " .. tostring(pos) end
end

-- JSON -> Lua: arrays become plain tuples, {shape, stride} objects layouts,
-- null the "keep this mode" marker.
local function conv(v)
  if v == json.null then return cute._ end
  if type(v) ~= "table" then return v end
  if v.shape ~= nil then return cute.make_layout(conv(v.shape), conv(v.stride)) end
  local r = {}
  for i = 1, #v do r[i] = conv(v[i]) end
  return r
end

local function run(op, a)
  if op == "size" or op == "cosize" or op == "rank" or op == "depth" then return cute[op](a[1]) end
  if op == "mode" then return cute.get(a[1], unpack(a[2])) end
  if op == "shape" or op == "stride" then return cute[op](a[1], unpack(a[2])) end
  if op == "crd2idx" then return cute.crd2idx(a[1], a[2]) end
  if op == "idx2crd" then return cute.idx2crd(a[1], a[2], a[3]) end
  if op == "make_layout" then return cute.make_layout(unpack(a)) end
  if op == "swizzle" then return cute.Swizzle(a[1], a[2], a[3])(a[4]) end
  if op == "swizzle_table" then
    local sw = cute.Swizzle(a[1], a[2], a[3])
    local t = {}
    for i = 0, 2 ^ (a[1] + a[2] + math.abs(a[3])) - 1 do t[#t + 1] = sw(i) end
    return t
  end
  if op == "swizzle_layout" then
    local sw = cute.Swizzle(a[1][1], a[1][2], a[1][3])
    local c = cute.make_composed_layout(sw, a[2], a[3])
    local t = {}
    for i = 0, cute.size(a[3]) - 1 do t[#t + 1] = c(i) end
    return t
  end
  assert(cute[op], "no function cute." .. op)
  return cute[op](unpack(a))
end

local stats = { exact = 0, pointwise = 0, image = 0, quirks = {} }

describe("layout test vectors", function()
  it("reads " .. path, function()
    assert(fh ~= nil, "the layout test vectors are missing: " .. path
      .. " (tests/data/layout/ in the repository; CUTELUA_LAYOUT_VECTORS names another file)")
    assert(data ~= nil, "cannot decode " .. path .. ": " .. tostring(decode_err))
    assert.equal(1500, #data.cases)
  end)

  if not data then return end

  for n, case in ipairs(data.cases) do
    local args = conv(case.args)
    local label = string.format("#%d %s %s", n, case.op, json.encode(case.args):sub(1, 160))
    if case.quirk then
      stats.quirks[#stats.quirks + 1] = string.format("#%d %s: %s", n, case.op, case.quirk)
    else
      it(label, function()
        local got = run(case.op, args)
        local want = conv(case.result)
        if cute.is_layout(want) then
          assert.is_true(cute.is_layout(got), "expected a layout, got " .. tostring(got))
          if H.same(got.shape, want.shape) and H.same(got.stride, want.stride) then
            stats.exact = stats.exact + 1
            return
          end
          if case.note and case.note:find("not surjective", 1, true) then
            -- left inverse: only its values on the image of the input are determined
            local input = args[1]
            for i = 0, cute.size(input) - 1 do
              assert.equal(i, got(input(i)), string.format("R(L(%d)) for R = %s", i, tostring(got)))
            end
            stats.image = stats.image + 1
            return
          end
          assert.is_truthy(case.result_table, string.format("got %s, want %s", tostring(got), tostring(want)))
          assert.same(case.result_table, H.table_of(got))
          stats.pointwise = stats.pointwise + 1
          print(string.format("\n  note: #%d %s matched point-wise only: got %s, reference %s",
            n, case.op, tostring(got), tostring(want)))
        else
          assert.is_true(H.same(got, want),
            string.format("got %s, want %s", cute.pretty_str(got), cute.pretty_str(want)))
          stats.exact = stats.exact + 1
        end
      end)
    end
  end

  it("reports the cases it skipped and how the rest matched", function()
    local q = stats.quirks
    print(string.format("\nlayout vectors: %d exact, %d left inverses checked on the image, %d point-wise; "
      .. "%d quirk case(s) skipped because cutelua follows C++ CuTe there (checked below):",
      stats.exact, stats.image, stats.pointwise, #q))
    for _, line in ipairs(q) do print("  " .. line) end
    assert.equal(4, #q)
    assert.equal(0, stats.pointwise)
  end)

  it("follows C++ CuTe on the quirk cases", function()
    -- idx2crd: a tuple index is split per mode, 5 into (2,3) is (1,2)
    assert.same({ 1, { 1, 2 } }, cute.idx2crd({ 1, 5 }, { 3, { 2, 3 } }))
    -- composition drops the modes a by-mode tiler does not reach
    local r = cute.composition(cute.make_layout({ 4, 6, 8 }, { 1, 4, 24 }),
      { cute.make_layout(2, 2), cute.make_layout(3, 1) })
    assert.equal("(2,3):(2,4)", tostring(r))
    -- right_inverse skips stride-0 modes
    assert.equal("4:2", tostring(cute.right_inverse(cute.make_layout({ 2, 4 }, { 0, 1 }))))
    -- flatten of an integer is the integer
    assert.equal(5, cute.flatten(5))
  end)
end)
