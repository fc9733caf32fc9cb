"""Timing of a torch call for the peers of bench/suites (imported by attention_torch.py
and gemm_torch.py, which run from bench/)."""
import torch


def median_ms(f, warmup=3, reps=30, before=None):
    """The median of `reps` timed calls of f (CUDA events around each), after `warmup` calls;
    before (optional): called, untimed, before each timed call (an L2 flush, say)."""
    for _ in range(warmup):
        f()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        if before is not None:
            before()
        start.record()
        f()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]
