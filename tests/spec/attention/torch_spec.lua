-- cute.lib.attention.forward at large shapes against torch (#gpu): torch computes
-- the reference on the GPU in float32 (tests/attention/sdpa_ref.py, a head at a
-- time), from the same Q, K, V written as .npy. An element of O passes when
-- |O - ref| <= 2^-7 (sum_j p_j |v_j| + |ref|) + 2^-12 for bf16 (2^-9 for f16), as
-- cute.testing.check_attention's bound; LSE within 1e-3 * max(1, |ref|). Fresh
-- random inputs, O and LSE poisoned first. Pending where python3, numpy or torch
-- with a GPU is missing (the script exits 77).
local cute = require "cute"

local function tmpdir()
  local d = os.tmpname()
  os.remove(d)
  assert(os.execute("mkdir -p " .. d) == 0)
  return d
end

-- Runs one problem; returns the worst error as a fraction of the bound, or nil and why.
local function run(c)
  local dt = cute[c.dtype or "bf16"]
  local B, Sq, Sk, Hq, Hkv, D = c.b, c.sq, c.sk or c.sq, c.hq, c.hkv or c.hq, c.d
  local seed = math.random(1, 2 ^ 30)
  local Q = cute.tensor(dt, { B, Sq, Hq, D }, "row"):uniform(-1, 1, seed)
  local K = cute.tensor(dt, { B, Sk, Hkv, D }, "row"):uniform(-1, 1, seed + 1)
  local V = cute.tensor(dt, { B, Sk, Hkv, D }, "row"):uniform(-1, 1, seed + 2)
  local O = cute.tensor(dt, { B, Sq, Hq, D }, "row"):fill(0 / 0)
  local LSE = cute.tensor(cute.f32, { B, Hq, Sq }, "row"):fill(0 / 0)
  local scale = c.scale or 1 / math.sqrt(D)
  cute.lib.attention.forward(Q, K, V, O, { causal = c.causal, window = c.window, scale = c.scale, lse = LSE })
  cute.synchronize()
  local dir = tmpdir()
  for n, t in pairs { q = Q, k = K, v = V, ours = O, ours_lse = LSE } do cute.save_npy(dir .. "/" .. n .. ".npy", t) end
  local w = c.window or { -1, -1 }
  local cmd = string.format("python3 tests/attention/sdpa_ref.py %s %d %d %d %.17g >/dev/null 2>&1", dir,
    c.causal and 1 or 0, w[1], w[2], scale)
  local ok, how, code = os.execute(cmd)
  local rc = type(ok) == "number" and ok / 256 or (how == "exit" and code or 1) -- LuaJIT 5.1 or 5.2 style
  for _, t in ipairs { Q, K, V, O, LSE } do t:free() end
  if rc == 77 then
    os.execute("rm -rf " .. dir)
    return nil, "torch with a GPU (or numpy) is not available"
  end
  assert(rc == 0, "tests/attention/sdpa_ref.py failed (" .. tostring(rc) .. "): " .. cmd)
  local ref, mag, lse = cute.load_npy(dir .. "/o.npy"), cute.load_npy(dir .. "/a.npy"), cute.load_npy(dir .. "/lse.npy")
  -- (f16 is written as numpy's float16: read its values as f32, not its storage bits)
  local ours = cute.load_npy(dir .. "/ours.npy", { dtype = cute.f32 })
  local ours_lse = cute.load_npy(dir .. "/ours_lse.npy")
  os.execute("rm -rf " .. dir)
  local rtol = dt == cute.bf16 and 2 ^ -7 or 2 ^ -9
  local worst, where, bad, rows, seen = 0, nil, 0, {}, {}
  local n = B * Sq * Hq * D
  for i = 0, n - 1 do
    local r, o = ref.data[i], ours.data[i]
    local bound = rtol * (mag.data[i] + math.abs(r)) + 2 ^ -12
    local e = math.abs(o - r) / bound
    -- luacheck: push ignore 581 (NaN must land in both branches)
    if not (e <= worst) then worst, where = e, i end
    if not (e <= 1) then
      bad = bad + 1
      local row = math.floor(i / D) -- (b, i, h)
      if not seen[row] and #rows < 8 then
        seen[row] = true
        rows[#rows + 1] = string.format("(b %d, i %d, h %d, d %d)", math.floor(row / (Sq * Hq)),
          math.floor(row / Hq) % Sq, row % Hq, i % D)
      end
    end
    -- luacheck: pop
  end
  assert(worst <= 1, string.format("%s: O element %d is %s, torch's %s (%.2f of the bound); %d of %d elements "
    .. "out of bounds, first at %s", c.name, where, tostring(ours.data[where]), tostring(ref.data[where]), worst, bad,
    n, table.concat(rows, " ")))
  for i = 0, B * Hq * Sq - 1 do
    local r, o = lse.data[i], ours_lse.data[i]
    if r == -math.huge then
      assert(o == -math.huge, string.format("%s: LSE %d of a row with no key is %s, not -inf", c.name, i, tostring(o)))
      for e = 0, D - 1 do -- and its O is 0 (LSE is (b, h, i); O is (b, i, h, :))
        local b, h, row = math.floor(i / (Hq * Sq)), math.floor(i / Sq) % Hq, i % Sq
        local v = ours.data[((b * Sq + row) * Hq + h) * D + e]
        assert(v == 0, string.format("%s: O of row %d (no key) is %s, not 0", c.name, row, tostring(v)))
      end
    else
      assert(math.abs(o - r) <= 1e-3 * math.max(1, math.abs(r)),
        string.format("%s: LSE %d is %s, torch's %s", c.name, i, tostring(o), tostring(r)))
    end
  end
  return worst
end

describe("cute.lib.attention.forward against torch", function()
  local cases = {
    { name = "B 2, S 4096, H 16, D 128", b = 2, sq = 4096, hq = 16, d = 128 },
    { name = "causal, GQA 32/8, S 8192, D 128", b = 1, sq = 8192, hq = 32, hkv = 8, d = 128, causal = true },
    { name = "causal, Sq 3000 < Sk 5000 (bottom-right), D 64", b = 2, sq = 3000, sk = 5000, hq = 8, d = 64,
      causal = true },
    { name = "causal, Sq 5000 > Sk 3000 (2000 rows see no key), D 128", b = 1, sq = 5000, sk = 3000, hq = 4, d = 128,
      causal = true },
    { name = "D 256, S 4096, f16", b = 1, sq = 4096, hq = 16, d = 256, dtype = "f16" },
    { name = "D 256, S 4096, bf16, causal", b = 1, sq = 4096, hq = 16, d = 256, causal = true },
    { name = "D 64, S 4096, f16", b = 2, sq = 4096, hq = 16, d = 64, dtype = "f16" },
    { name = "sliding window (256, 0), S 6000, D 128, a scale", b = 1, sq = 6000, hq = 8, d = 128,
      window = { 256, 0 }, scale = 0.05 },
  }
  for _, c in ipairs(cases) do
    it(c.name .. " #gpu", function()
      local worst, why = run(c)
      if not worst then pending(why) return end
      assert.is_true(worst <= 1)
    end)
  end
end)
