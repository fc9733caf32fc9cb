-- The benchmark harness's reports (bench/harness.lua), from synthetic results:
-- the markdown table, CSV, JSON and the SVG chart. Running it on a GPU is the
-- bench/quick test.
package.path = "bench/?.lua;" .. package.path
local H = require "harness"

local meta = { gpu = "Test GPU", sm_count = 1, compute_capability = "9.0", memory_gb = "1", driver = "13.0",
  cuda = "13.0", clocks = "n/a", date = "2026-11-21 00:00 UTC", commit = "abc1234", cutelua = "0.1.0", quick = false }

local function harness()
  local h = H.new()
  h.results = {
    { suite = "copy", name = "copy 16B", shape = "1 GiB", dtype = "f32", median_ms = 0.5, p10_ms = 0.49, p90_ms = 0.52,
      reps = 600, spread = 0.06, value = 4200, unit = "GB/s", peer = "cuMemcpyDtoD", peer_value = 4300,
      peer_unit = "GB/s", ratio = 4200 / 4300, goal = 0.95, check = "ok" },
    { suite = "gemm", name = "sgemm, \"tiled\"", shape = "4096^3", dtype = "f32", median_ms = 3, p10_ms = 2.9,
      p90_ms = 3.1, reps = 100, spread = 0.07, value = 45.8, unit = "TFLOP/s", peer = "cublas", peer_value = 51,
      peer_unit = "TFLOP/s", ratio = 45.8 / 51, goal = 0.7, check = "WRONG: element 3" },
  }
  h.peers = { copy = { name = "cuMemcpyDtoD", value = 4300, unit = "GB/s", result = { median_ms = 0.5 } } }
  return h
end

describe("benchmark harness reports", function()
  it("writes a markdown table with the peers", function()
    local md = harness():markdown(meta)
    assert.matches("GPU: Test GPU", md)
    assert.matches("| copy | copy 16B | 1 GiB | f32 | 0.5 ms | 6.0% | 4.200 TB/s | cuMemcpyDtoD 4.300 TB/s | 0.977 "
      .. "| >= 0.95 | ok |", md, 1, true)
    assert.matches("Peers and limits measured in this run", md)
  end)

  it("lists a row's other peers (torch.matmul) below the table with their ratios", function()
    local h = harness()
    h.results[2].also = { { name = "torch.matmul (torch 9)", value = 40, unit = "TFLOP/s", ratio = 45.8 / 40 } }
    local md = h:markdown(meta)
    assert.matches("Against other peers measured in this run", md, 1, true)
    assert.matches("| gemm | sgemm, \"tiled\" | 4096^3 | f32 | 45.8 TFLOP/s | torch.matmul (torch 9) 40 TFLOP/s "
      .. "| 1.145 |", md, 1, true)
    assert.is_nil(harness():markdown(meta):find("Against other peers", 1, true))
  end)

  it("writes CSV with quoting", function()
    local csv = harness():csv()
    local lines = {}
    for l in csv:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.equal(3, #lines)
    assert.matches("^suite,name,shape,dtype,median_ms", lines[1])
    assert.matches('"sgemm, ""tiled"""', lines[3], 1, true)
  end)

  it("writes JSON that parses", function()
    local dkjson = require "dkjson"
    local j = dkjson.decode(harness():json(meta))
    assert.equal("Test GPU", j.meta.gpu)
    assert.equal(2, #j.results)
    assert.equal(600, j.results[1].reps)
    assert.equal("cuMemcpyDtoD", j.peers[1].name)
  end)

  it("draws an SVG bar per ratio, coloured by goal and check", function()
    local svg = harness():svg(meta)
    assert.matches("^<svg xmlns=", svg)
    assert.matches("</svg>\n$", svg)
    local bars = 0
    for color in svg:gmatch('<rect x="%d+" y="%d+" width="[%d.]+" height="22" fill="(#%x+)"/>') do
      bars = bars + 1
      assert.is_true(color == "#4c9a2a" or color == "#c0392b")
    end
    assert.equal(2, bars)
    assert.matches("0.977", svg)
    -- balanced tags (a well-formed subset: no nesting besides the root)
    local opens = select(2, svg:gsub("<svg", ""))
    local closes = select(2, svg:gsub("</svg>", ""))
    assert.equal(opens, closes)
  end)

  it("finds wrong results", function()
    assert.is_false(harness():all_correct())
  end)
end)

describe("benchmark harness skipped cases", function()
  it("records a case's skip reason without running it, and does not count it as a failure", function()
    local h = H.new()
    local ran = false
    local old = io.stdout
    io.stdout = { write = function() end, flush = function() end } -- luacheck: ignore
    local row = h:run_case { suite = "s", name = "fp8", skip = function() return "no fp8 kernel yet" end,
      run = function() ran = true end }
    local row2 = h:run_case { suite = "s", name = "grouped", skip = "no grouped GEMM yet",
      run = function() ran = true end }
    io.stdout = old -- luacheck: ignore
    assert.is_false(ran)
    assert.equal("skipped: no fp8 kernel yet", row.check)
    assert.equal("skipped: no grouped GEMM yet", row2.check)
    assert.is_true(h:all_correct())
    h.results[#h.results + 1] = { name = "bad", check = "ERROR: boom" }
    assert.is_false(h:all_correct())
  end)

  it("loads the gemm_sm90 suite and declares the issue's shapes, each with its peer", function()
    local h = H.new()
    h.quick = function() return false end
    local suite = dofile("bench/suites/gemm_sm90.lua")
    suite(h)
    local shapes, skips = {}, {}
    for _, c in ipairs(h.cases) do
      shapes[#shapes + 1] = c.name .. " " .. c.shape
      if c.skip then skips[#skips + 1] = c.name end
    end
    local all = table.concat(shapes, "\n")
    for _, s in ipairs { "gemm bf16 2048x2048x2048", "gemm bf16 4096x4096x4096", "gemm bf16 8192x8192x8192",
      "gemm bf16 4096x14336x4096", "gemm bf16 8192x1024x8192", "gemm bf16 16384x16384x1024", "gemm bf16 128x8192x8192",
      "gemm bf16 16x8192x8192", "gemm bf16 1x4096x4096", "(weights GB/s) 1x4096x4096",
      "gemm fp8 e4m3 (vs cuBLASLt) 4096x4096x4096", "gemm fp8 e4m3 (vs cuBLASLt) 8192x8192x8192", "8 experts",
      "B N-major 4096x4096x4096", "(weights GB/s, PDL chain) 128x8192x8192" } do
      assert.is_truthy(all:find(s, 1, true), s .. " is missing from the suite")
    end
    assert.same({}, skips)
    for _, c in ipairs(h.cases) do
      if not c.skip then assert.is_truthy(c.peer == "copy" or type(c.peer) == "function", c.name .. " has no peer") end
      -- the bf16 rows also compare with torch.matmul (where torch is present)
      if c.name:find("^gemm bf16") and c.flops then assert.is_function(c.also, c.name .. " " .. c.shape) end
    end
  end)
end)
