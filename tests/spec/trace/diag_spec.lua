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

  it("names the function called outside a kernel, not the IR op", function()
    for _, name in ipairs { "thread_idx", "block_idx", "block_dim", "grid_dim", "lane_idx", "warp_idx", "smid",
      "clock", "sync_threads", "sync_warp", "fence", "ballot" } do
      local msg = H.error_at(function() local v = cute[name]() return v end)
      assert.matches("cute%." .. name .. "%(%) can only be used while tracing a kernel", msg)
      assert.is_nil(msg:find("sreg", 1, true))
    end
    -- a dim3 kept from a trace and read after it
    local kept
    H.ir(function(a) kept = cute.block_idx(); a[0] = 1 end, { H.f32() })
    local msg = H.error_at(function() local v = kept.y return v end)
    assert.matches("cute%.block_idx%(%)%.y can only be used while tracing a kernel", msg)
  end)

  it("lists the names there are for a fence scope, an atomic order, a barrier mode", function()
    local msg = H.error_at(function() H.ir(function(a) cute.fence("galaxy"); a[0] = 1 end, { H.f32() }) end)
    assert.matches("cute%.fence scope: unknown scope \"galaxy\" %(one of \"gpu\", \"cta\", \"cluster\", \"sys\"%)",
      msg)
    msg = H.error_at(function() H.ir(function(a) cute.fence("cta", "seq"); a[0] = 1 end, { H.f32() }) end)
    assert.matches("cute%.fence semantics: unknown fence semantics \"seq\" %(one of \"acq_rel\", \"sc\"%)", msg)
    msg = H.error_at(function()
      H.ir(function(a) cute.atomic_add(a:ptr_at(0), 1, { order = "relaxd" }) end, { H.f32() })
    end, 1)
    assert.matches("cute%.atomic_add order: unknown memory order \"relaxd\" %(one of .*\"relaxed\"", msg)
    msg = H.error_at(function() H.ir(function(a) cute.barrier(1, 64, "arive"); a[0] = 1 end, { H.f32() }) end)
    assert.matches("cute%.barrier mode: unknown barrier mode \"arive\" %(one of \"sync\", \"arrive\"%)", msg)
    msg = H.error_at(function() H.ir(function(a) cute.fence(7); a[0] = 1 end, { H.f32() }) end)
    assert.matches("cute%.fence scope: unknown scope 7", msg)
    assert.matches("fence%.sc%.cta", H.ir(function(a) cute.fence("cta", "sc"); a[0] = 1 end, { H.f32() }))
  end)

  it("reports a kernel body that recurses without end at the user's line", function()
    -- a recursion that is not a tail call runs out of Lua stack
    local msg = H.error_of(function()
      H.ir(function(a)
        local function rec(v) local r = rec(v + 1) return r end -- the line reported
        a[0] = rec(a[1])
      end, { cute.fake_tensor(cute.i32, 16) })
    end)
    local line = debug.getinfo(1, "l").currentline - 4
    assert.matches("diag_spec%.lua:" .. line .. ": the kernel body recursed too deeply %(Lua stack overflow%)", msg)
    -- the same in a device function
    -- (the overflow is met either inside the function or at its call: either line is the user's)
    local f
    f = cute.func(function(v) return f(v + 1) end)
    local fline = debug.getinfo(1, "l").currentline - 1
    msg = H.error_of(function() H.ir(function(a) a[0] = f(a[1]) end, { cute.fake_tensor(cute.i32, 16) }) end)
    local at = tonumber(msg:match("diag_spec%.lua:(%d+): "))
    assert(at == fline or at == fline + 2, msg)
    assert.matches("recursed too deeply", msg)
  end)

  it("stops an endless trace at the limit on IR instructions, at the user's line", function()
    -- a tail call does not grow the stack: the trace goes on until the limit
    local t0 = os.clock()
    local msg = H.error_of(function()
      H.ir(function(a)
        local function rec(v) return rec(v + 1) end -- the line reported
        a[0] = rec(a[1])
      end, { cute.fake_tensor(cute.i32, 16) }, { max_ir_ops = 20000 })
    end)
    local line = debug.getinfo(1, "l").currentline - 4
    assert.matches("diag_spec%.lua:" .. line .. ": the kernel's IR reached its limit of 20000 instructions: a trace "
      .. "that never ends", msg)
    assert.matches("the kernel option max_ir_ops = n, or CUTELUA_MAX_IR_OPS=n", msg)
    assert.is_true(os.clock() - t0 < 5)
    -- a Lua loop with no exit
    msg = H.error_at(function()
      H.ir(function(a) while true do a[0] = a[0] + 1 end end, { H.f32() }, { max_ir_ops = 3000 })
    end, 1)
    assert.matches("reached its limit of 3000 instructions", msg)
    -- a kernel within the limit compiles; the default is far above cute.lib's kernels
    assert.matches("store", H.ir(function(a) for i = 0, 99 do a[i] = i end end, { H.f32() }, { max_ir_ops = 400 }))
    assert.equal(500000, require("cute.kernel").MAX_IR_OPS_DEFAULT)
  end)

  it("takes the limit on IR instructions from CUTELUA_MAX_IR_OPS", function()
    local ffi = require "ffi"
    pcall(ffi.cdef, "int setenv(const char *name, const char *value, int overwrite); int unsetenv(const char *name);")
    ffi.C.setenv("CUTELUA_MAX_IR_OPS", "50", 1)
    local ok, msg = pcall(H.ir, function(a) for i = 0, 99 do a[i] = i end end, { H.f32() })
    local ok2, msg2 = pcall(H.ir, function(a) for i = 0, 99 do a[i] = i end end, { H.f32() }, { max_ir_ops = 0 })
    ffi.C.setenv("CUTELUA_MAX_IR_OPS", "lots", 1)
    local ok3, msg3 = pcall(H.ir, function(a) a[0] = 1 end, { H.f32() })
    ffi.C.unsetenv("CUTELUA_MAX_IR_OPS")
    assert.is_false(ok)
    assert.matches("reached its limit of 50 instructions", msg)
    assert.is_true(ok2, msg2) -- the option wins; 0 is no limit
    assert.is_false(ok3)
    assert.matches("CUTELUA_MAX_IR_OPS must be a whole number of IR instructions", msg3)
  end)

  it("checks the info of compiler.compile", function()
    local compiler = require "cute.compiler"
    local msg = H.error_at(function() compiler.compile("x", { arch = "sm_90a" }, { salt = {} }) end)
    assert.matches("compiler%.compile: info%.salt must be a string, got a table", msg)
    msg = H.error_at(function() compiler.compile("x", { arch = "sm_90a" }, { key_text = 5 }) end)
    assert.matches("info%.key_text must be a string, got number 5", msg)
    msg = H.error_at(function() compiler.cache_key("x", { arch = "sm_90a" }, {}) end)
    assert.matches("compiler%.cache_key: the salt must be a string, got table", msg)
  end)
end)
