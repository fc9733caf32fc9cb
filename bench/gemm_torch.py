"""torch.matmul on GEMM shapes, for same-run ratios (bench/suites/gemm_sm90.lua runs it
once and reads its lines).

    python3 bench/gemm_torch.py M:N:K:BMAJOR ...      e.g. 4096:4096:4096:k 4096:4096:4096:n

bf16 in and out. A is M x K row-major; BMAJOR k: the weights stored N x K (a linear
layer's, torch.nn.functional.linear(a, w) = a @ w.T), n: B stored K x N (a @ b).
Prints one line a shape: "torch matmul M:N:K:BMAJOR MS TFLOPS" (timed settled, as the
suite times cute.gemm: torch_timing.median_ms). Shapes of up to 128 rows (decode) flush
the L2 before each timed call, as the suite does for cute.gemm and cuBLAS there
(torch_timing.l2_flusher). Exits 77 without torch or a GPU."""
import sys

try:
    import torch

    from torch_timing import l2_flusher, median_ms
except Exception:  # noqa: BLE001
    sys.exit(77)
if not torch.cuda.is_available():
    sys.exit(77)

print("# " + torch.cuda.get_device_name() + " torch " + torch.__version__, flush=True)
flush = l2_flusher()


for arg in sys.argv[1:]:
    m, n, k, major = arg.split(":")
    m, n, k = int(m), int(n), int(k)
    a = torch.rand(m, k, device="cuda", dtype=torch.bfloat16) * 2 - 1
    if major == "k":
        w = torch.rand(n, k, device="cuda", dtype=torch.bfloat16) * 2 - 1

        def f():
            return torch.nn.functional.linear(a, w)
    else:
        b = torch.rand(k, n, device="cuda", dtype=torch.bfloat16) * 2 - 1

        def f():
            return torch.matmul(a, b)
    ms = median_ms(f, before=flush if m <= 128 else None)
    print(f"torch matmul {arg} {ms:.5f} {2 * m * n * k / ms / 1e9:.2f}", flush=True)
