-- Diagnostics: every op records the Lua line that made it; errors name it;
-- line info reaches the PTX.
local cute = require "cute"
local H = require "tests.spec.trace.helper"

describe("tracer diagnostics", function()
  it("records the user's file and line on each op", function()
    local ir = H.ir(function(a)
      local i = cute.thread_idx().x -- line A
      a[i] = 1
    end, { H.f32() })
    local line = debug.getinfo(1, "l").currentline
    assert.matches("sreg.tid.x : i32  ; tests/spec/trace/diag_spec.lua:" .. (line - 3), ir)
  end)

  it("names the line of a type error inside a nested helper", function()
    local function helper(x) return x + 1.5 end
    local msg = H.error_of(function()
      H.ir(function(a) a[0] = helper(cute.thread_idx().x):to(cute.f32) end, { H.f32() })
    end)
    local line = debug.getinfo(1, "l").currentline - 4
    assert.matches("diag_spec%.lua:" .. line .. ":", msg)
    assert.matches("non%-integer 1.5", msg)
  end)

  it("puts Lua files and lines in the PTX with line info", function()
    local ptx = H.ptx(function(a) a[cute.thread_idx().x] = 2 end, { H.f32() }, { lineinfo = true })
    assert.matches("%.file%s+%d+%s+\"[^\"]*diag_spec%.lua\"", ptx)
    assert.matches("%.loc%s+%d+%s+%d+", ptx)
  end)

  it("refuses values of another kernel", function()
    local leaked
    H.ir(function(a) leaked = cute.thread_idx().x; a[0] = 1 end, { H.f32() })
    local msg = H.error_of(function() H.ir(function(a) a[leaked] = 1 end, { H.f32() }) end)
    assert.matches("another kernel", msg)
  end)

  it("says cute constructs need a trace", function()
    assert.matches("while tracing", H.error_of(function() cute.range(4) end))
    assert.matches("only be used while tracing", H.error_of(function() cute.thread_idx().x:lt(1) end))
  end)
end)
