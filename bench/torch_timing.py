"""Timing of a torch call for the peers of bench/suites (imported by attention_torch.py,
attention_decode_torch.py and gemm_torch.py, which run from bench/).

A peer is timed as the suites time cutelua's kernels (bench/harness.lua, cute.bench):
a first call untimed, then SETTLE_MS of calls untimed, then calls each between its own
pair of CUDA events until MIN_MS of them (at least MIN_REPS), and the median. The calls
are queued back to back in batches, the host waiting only at a batch's end, as
cute.bench does: waiting after every call (as this did until 2026-11-29, eleventh
attention run) put torch's host time for a call (its dispatch: 7-27 us a call for SDPA at S 512)
inside the call's events while the GPU idled, which cost cuDNN 4-10% at d 64 S 512 and
18-20% at d 64 causal S 512 on the H200 (docs/benchmarks.md, "torch's calls back to
back"). TORCH_TIMING_SYNC_EACH=1 times the old way, to compare; TORCH_TIMING_MIN_MS=N
times N ms of calls instead of 300 (2000 averages the power limit's cycle:
docs/benchmarks.md). Under sustained
tensor-core load the board's power limit lowers the clock within some 50-100
ms; a peer timed in a short burst (30 calls: 13 ms at 0.44 ms a call) ran at the boost
clock while the kernel it was compared with ran settled, which flattered the peer by up
to 13% (docs/benchmarks.md, "The torch peers' timing")."""
import os

import torch

SETTLE_MS = 200
MIN_MS = int(os.environ.get("TORCH_TIMING_MIN_MS", "300"))
MIN_REPS = 10
MAX_REPS = 100000


def l2_flusher():
    """A function that flushes the L2 as cute.bench does: it reads (sums) a buffer of twice
    the L2's size, written once, which leaves the L2 with none of the inputs and no dirty
    lines. Call it as median_ms's `before`."""
    l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 64 << 20) or (64 << 20)
    buf = torch.ones(2 * l2 // 4, dtype=torch.int32, device="cuda")
    return buf.sum


SYNC_EACH = os.environ.get("TORCH_TIMING_SYNC_EACH") == "1"
BATCH = 512


def _batch(f, before, n):
    """n calls queued back to back, each between its own pair of events; their times (ms)."""
    evs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
    for start, end in evs:
        if before is not None:
            before()
        start.record()
        f()
        end.record()
        if SYNC_EACH:
            end.synchronize()
    evs[-1][1].synchronize()
    return [start.elapsed_time(end) for start, end in evs]


def median_ms(f, before=None, settle_ms=SETTLE_MS, min_ms=MIN_MS, min_reps=MIN_REPS):
    """The median time of f (ms): after a first call and settle_ms of calls, both untimed,
    calls each between CUDA events until min_ms of them (and at least min_reps), queued
    back to back in batches (the host waits at a batch's end only, unless
    TORCH_TIMING_SYNC_EACH=1); before (optional): called, untimed, before each call (an
    L2 flush, say), queued in the same stream."""
    per = _batch(f, before, 1)[0]  # (may plan, pick an algorithm, allocate)
    settled = 0.0
    while settled < settle_ms:
        n = max(1, min(BATCH, int((settle_ms - settled) / max(per, 1e-4) / 4) + 1))
        ts = _batch(f, before, n)
        settled += sum(ts)
        per = sum(ts) / len(ts)
    reps = max(min_reps, min(MAX_REPS, int(min_ms / max(per, 1e-4)) + 1))
    times = []
    while len(times) < reps:
        times += _batch(f, before, min(BATCH, reps - len(times)))
    times.sort()
    return times[len(times) // 2]
