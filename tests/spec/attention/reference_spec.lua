-- cute.testing.check_attention, the float64 reference of the attention
-- specs, tested on host tensors against attention computed here the naive
-- way (an explicit mask matrix, a softmax over it): it passes the right
-- answer, and fails, naming the element, on outputs that are off by a little.
local cute = require "cute"
local ffi = require "ffi"
local T = cute.testing

-- A host tensor (f32 or f64) over a row-major shape, with values from f(index list).
local function host(dt, shape, f)
  local strides, st = {}, 1
  for i = #shape, 1, -1 do
    strides[i] = st
    st = st * shape[i]
  end
  local layout = cute.make_layout(shape, strides)
  local data = ffi.new((dt == cute.f32 and "float" or "double") .. "[?]", cute.cosize(layout))
  local function walk(c, k)
    if k > #shape then
      local off = 0
      local stride = 1
      for i = #shape, 1, -1 do
        off = off + c[i] * stride
        stride = stride * shape[i]
      end
      data[off] = f(c)
      return
    end
    for i = 0, shape[k] - 1 do
      c[k] = i
      walk(c, k + 1)
    end
  end
  walk({}, 1)
  return setmetatable({ data = data, dtype = dt, layout = layout }, require("cute.tensor").HostTensor)
end

-- Naive attention: for each (b, i, h) the mask row allowed[j], the softmax, O and LSE.
local function naive(q, k, v, B, Sq, Sk, Hq, Hk, D, o)
  local scale = o.scale or 1 / math.sqrt(D)
  local out, lse = {}, {}
  for b = 0, B - 1 do
    for h = 0, Hq - 1 do
      local hk = math.floor(h * Hk / Hq)
      for i = 0, Sq - 1 do
        local allowed, s, any = {}, {}, false
        for j = 0, Sk - 1 do
          local d = j - (i + Sk - Sq) -- distance from the diagonal (bottom-right aligned)
          local ok = true
          if o.causal and d > 0 then ok = false end
          if o.window and o.window[1] >= 0 and d < -o.window[1] then ok = false end
          if o.window and o.window[2] >= 0 and d > o.window[2] then ok = false end
          allowed[j] = ok
          any = any or ok
          local dot = 0
          for e = 0, D - 1 do dot = dot + q[b][i][h][e] * k[b][j][hk][e] end
          s[j] = scale * dot
        end
        local key = b .. "," .. i .. "," .. h
        if not any then
          lse[key] = -math.huge
          for e = 0, D - 1 do out[key .. "," .. e] = 0 end
        else
          local z = 0
          for j = 0, Sk - 1 do if allowed[j] then z = z + math.exp(s[j]) end end
          lse[key] = math.log(z)
          for e = 0, D - 1 do
            local acc = 0
            for j = 0, Sk - 1 do if allowed[j] then acc = acc + math.exp(s[j]) / z * v[b][j][hk][e] end end
            out[key .. "," .. e] = acc
          end
        end
      end
    end
  end
  return out, lse
end

local function nested(B, S, H, D, seed)
  math.randomseed(seed)
  local t = {}
  for b = 0, B - 1 do
    t[b] = {}
    for i = 0, S - 1 do
      t[b][i] = {}
      for h = 0, H - 1 do
        t[b][i][h] = {}
        for e = 0, D - 1 do t[b][i][h][e] = math.random() * 2 - 1 end
      end
    end
  end
  return t
end

local function setup(B, Sq, Sk, Hq, Hk, D, o)
  local q, k, v = nested(B, Sq, Hq, D, 1), nested(B, Sk, Hk, D, 2), nested(B, Sk, Hk, D, 3)
  local out, lse = naive(q, k, v, B, Sq, Sk, Hq, Hk, D, o)
  local Q = host(cute.f64, { B, Sq, Hq, D }, function(c) return q[c[1]][c[2]][c[3]][c[4]] end)
  local K = host(cute.f64, { B, Sk, Hk, D }, function(c) return k[c[1]][c[2]][c[3]][c[4]] end)
  local V = host(cute.f64, { B, Sk, Hk, D }, function(c) return v[c[1]][c[2]][c[3]][c[4]] end)
  local function O(bump)
    return host(cute.f64, { B, Sq, Hq, D }, function(c)
      local key = c[1] .. "," .. c[2] .. "," .. c[3] .. "," .. c[4]
      return out[key] + (bump and bump(c) or 0)
    end)
  end
  local function LSE(bump)
    return host(cute.f64, { B, Hq, Sq }, function(c)
      return lse[c[1] .. "," .. c[3] .. "," .. c[2]] + (bump and bump(c) or 0)
    end)
  end
  return Q, K, V, O, LSE
end

local function raises(fn)
  local ok, msg = pcall(fn)
  assert.is_false(ok, "expected the check to fail")
  return tostring(msg)
end

describe("cute.testing.check_attention", function()
  for _, o in ipairs { {}, { causal = true }, { window = { 3, 1 } }, { causal = true, scale = 0.7 } } do
    local name = "agrees with naive attention " .. (o.causal and "(causal) " or "") .. (o.window and "(window)" or "")
    it(name, function()
      local Q, K, V, O, LSE = setup(2, 7, 11, 4, 2, 8, o)
      local r = T.check_attention(Q, K, V, O(), LSE(), o)
      assert.equal(2 * 7 * 4, r.rows)
      assert.is_true(r.max_rel < 1e-12, tostring(r.max_rel))
      -- sampled rows
      assert.equal(10, T.check_attention(Q, K, V, O(), LSE(), { causal = o.causal, window = o.window, scale = o.scale,
        samples = 10 }).rows)
    end)
  end

  it("sees fully masked rows (Sq > Sk, causal): O must be 0 and LSE -inf", function()
    local Q, K, V, O, LSE = setup(1, 9, 4, 1, 1, 8, { causal = true })
    local r = T.check_attention(Q, K, V, O(), LSE(), { causal = true })
    assert.equal(5, r.masked_rows)
    local msg = raises(function()
      T.check_attention(Q, K, V, O(function(c) return c[2] == 0 and 1e-3 or 0 end), LSE(), { causal = true })
    end)
    assert.matches("sees no key %(masked out%), so O must be 0", msg)
  end)

  it("fails an output off by 2% in one element, naming it", function()
    local Q, K, V, O, LSE = setup(1, 5, 6, 2, 1, 8, {})
    local msg = raises(function()
      T.check_attention(Q, K, V, O(function(c)
        return (c[2] == 3 and c[3] == 1 and c[4] == 5) and 0.02 or 0
      end), LSE())
    end)
    assert.matches("O%(0, 3, 1, :%) element 5", msg)
  end)

  it("fails a wrong LSE and a mask left out", function()
    local Q, K, V, O, LSE = setup(1, 6, 6, 1, 1, 8, { causal = true })
    local msg = raises(function()
      T.check_attention(Q, K, V, O(), LSE(function(c) return c[3] == 2 and 0.01 or 0 end), { causal = true })
    end)
    assert.matches("LSE%(0, 2, 0%)", msg)
    -- the causal output checked as if there were no mask
    raises(function() T.check_attention(Q, K, V, O(), LSE(), {}) end)
  end)

  it("checks packed (varlen) sequences and refuses mismatched shapes", function()
    -- two sequences packed: rows 0-2 and 3-6 of Q, keys 0-4 and 5-9
    local q, k, v = nested(1, 7, 2, 8, 4), nested(1, 10, 1, 8, 5), nested(1, 10, 1, 8, 6)
    local Q = host(cute.f64, { 7, 2, 8 }, function(c) return q[0][c[1]][c[2]][c[3]] end)
    local K = host(cute.f64, { 10, 1, 8 }, function(c) return k[0][c[1]][c[2]][c[3]] end)
    local V = host(cute.f64, { 10, 1, 8 }, function(c) return v[0][c[1]][c[2]][c[3]] end)
    local out, lse = {}, {}
    for _, seq in ipairs { { 0, 3, 0, 5 }, { 3, 7, 5, 10 } } do
      local sq, sk = seq[2] - seq[1], seq[4] - seq[3]
      local qs, ks, vs = { [0] = {} }, { [0] = {} }, { [0] = {} }
      for i = 0, sq - 1 do qs[0][i] = q[0][seq[1] + i] end
      for j = 0, sk - 1 do ks[0][j], vs[0][j] = k[0][seq[3] + j], v[0][seq[3] + j] end
      local o, l = naive(qs, ks, vs, 1, sq, sk, 2, 1, 8, { causal = true })
      for i = 0, sq - 1 do
        for h = 0, 1 do
          lse[(seq[1] + i) .. "," .. h] = l["0," .. i .. "," .. h]
          for e = 0, 7 do out[(seq[1] + i) .. "," .. h .. "," .. e] = o["0," .. i .. "," .. h .. "," .. e] end
        end
      end
    end
    local O = host(cute.f64, { 7, 2, 8 }, function(c) return out[c[1] .. "," .. c[2] .. "," .. c[3]] end)
    local LSE = host(cute.f64, { 2, 7 }, function(c) return lse[c[2] .. "," .. c[1]] end)
    local opts = { cu_seqlens_q = { 0, 3, 7 }, cu_seqlens_k = { 0, 5, 10 }, causal = true }
    assert.equal(14, T.check_attention(Q, K, V, O, LSE, opts).rows)
    -- the same output read as one sequence fails
    raises(function() T.check_attention(Q, K, V, O, LSE, { cu_seqlens_q = { 0, 7 }, cu_seqlens_k = { 0, 10 },
      causal = true }) end)
    assert.matches("shapes do not match", raises(function()
      T.check_attention(Q, K, V, K, nil, { cu_seqlens_q = { 0, 7 }, cu_seqlens_k = { 0, 10 }, causal = true })
    end))
  end)
end)
