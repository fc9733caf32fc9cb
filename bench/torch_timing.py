"""Timing of a torch call for the peers of bench/suites (imported by attention_torch.py,
attention_decode_torch.py and gemm_torch.py, which run from bench/).

A peer is timed as the suites time cutelua's kernels (bench/harness.lua, cute.bench):
a first call untimed, then SETTLE_MS of calls untimed, then calls each between its own
pair of CUDA events until MIN_MS of them (at least MIN_REPS), and the median. Under
sustained tensor-core load the board's power limit lowers the clock within some 50-100
ms; a peer timed in a short burst (30 calls: 13 ms at 0.44 ms a call) ran at the boost
clock while the kernel it was compared with ran settled, which flattered the peer by up
to 13% (docs/benchmarks.md, "The torch peers' timing")."""
import torch

SETTLE_MS = 200
MIN_MS = 300
MIN_REPS = 10
MAX_REPS = 100000


def l2_flusher():
    """A function that flushes the L2 as cute.bench does: it reads (sums) a buffer of twice
    the L2's size, written once, which leaves the L2 with none of the inputs and no dirty
    lines. Call it as median_ms's `before`."""
    l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 64 << 20) or (64 << 20)
    buf = torch.ones(2 * l2 // 4, dtype=torch.int32, device="cuda")
    return buf.sum


def _timed(f, before, start, end):
    if before is not None:
        before()
    start.record()
    f()
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def median_ms(f, before=None, settle_ms=SETTLE_MS, min_ms=MIN_MS, min_reps=MIN_REPS):
    """The median time of f (ms): after a first call and settle_ms of calls, both untimed,
    calls each between CUDA events until min_ms of them (and at least min_reps);
    before (optional): called, untimed, before each call (an L2 flush, say)."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    _timed(f, before, start, end)  # (may plan, pick an algorithm, allocate)
    settled = 0.0
    for _ in range(MAX_REPS):
        if settled >= settle_ms:
            break
        settled += _timed(f, before, start, end)
    times, total = [], 0.0
    while (total < min_ms or len(times) < min_reps) and len(times) < MAX_REPS:
        t = _timed(f, before, start, end)
        times.append(t)
        total += t
    times.sort()
    return times[len(times) // 2]
