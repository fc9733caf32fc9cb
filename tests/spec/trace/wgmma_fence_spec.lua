-- wgmma.fence, the worked example of docs/ir.md ("Adding an instruction"):
-- one row of the op table (an ASM0 row: its PTX is the row's text) and one Lua
-- function, cute.arch.warpgroup_fence. It is in the PTX for sm_90a, and sm_90
-- and sm_80 refuse it at the user's line, naming the feature and the target
-- that has it.
local cute = require "cute"
local ir = require "cute.ir"
local H = require "tests.spec.trace.helper"

local FENCE_LINE = debug.getinfo(1, "l").currentline + 2
local function body(x)
  cute.arch.warpgroup_fence()
  x[cute.thread_idx().x] = 1
end

describe("cute.arch.warpgroup_fence (wgmma.fence)", function()
  it("is wgmma.fence.sync.aligned in the PTX for sm_90a, and the cubin builds", function()
    local h = H.compile(body, { H.f32(128) }, { arch = "sm_90a", max_threads = 128, cache = false })
    assert.matches("wgmma.fence", h:ir(), 1, true)
    assert.matches("wgmma.fence.sync.aligned;", h:ll(), 1, true)
    assert.equal(1, H.count(h:ptx(), "wgmma.fence.sync.aligned;"))
    assert.equal("\127ELF", h:cubin():sub(1, 4))
  end)

  for _, arch in ipairs { "sm_90", "sm_80" } do
    it("is refused for " .. arch .. " at the user's line, naming WGMMA and sm_90a", function()
      local msg = H.error_of(function() H.compile(body, { H.f32(128) }, { arch = arch, cache = false }) end)
      assert.matches("wgmma_fence_spec%.lua:" .. FENCE_LINE .. ": ", msg) -- the line of warpgroup_fence() in body
      assert.matches("wgmma.fence needs WGMMA, which " .. arch .. " lacks %(sm_90a has it%)", msg)
    end)
  end

  it("is refused by the IR for sm_90 as it is built, and by the verifier when built raw", function()
    local m = ir.module { target = "sm_90" }
    local k = m:kernel("k")
    m:set_loc("fence.lua", 3, "k")
    local ok, msg = pcall(k.op, k, "wgmma.fence", nil)
    assert.is_false(ok)
    assert.matches("fence%.lua:3 %(k%): error: wgmma%.fence needs WGMMA, which sm_90 lacks %(sm_90a has it%)", msg)
    local raw = ir.module { target = "sm_90", check = false }
    local r = raw:kernel("r")
    r:op("wgmma.fence", nil)
    ok, msg = pcall(raw.verify, raw)
    assert.is_false(ok)
    assert.matches("wgmma.fence needs WGMMA, which sm_90 lacks (sm_90a has it)", msg, 1, true)
    raw:set_target("sm_90a")
    raw:verify() -- the same module, for sm_90a: valid
    m:free()
    raw:free()
  end)
end)
