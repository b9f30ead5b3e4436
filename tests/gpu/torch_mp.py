"""torch_mp.py - multiprocessing workers using CUDA, the two ways that work.

  torch_mp.py spawn   the parent uses CUDA first, then a spawn pool of 2
                      workers each computes on the GPU
  torch_mp.py fork    the parent imports torch but never touches CUDA, then
                      a fork pool of 2 workers each computes on the GPU
Each worker reports its mem_get_info total (the slice's limit inside a
slice: the workers are in the slice) and a checksum.  Output:
"mode=M workers=2 ok=0|1 totals=T1,T2 sums=S1,S2" (sums must be 2^20 x 3).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpuwork  # noqa: E402

try:
    import torch
    import torch.multiprocessing as mp
except ImportError:
    gpuwork.missing("torch")


def work(i):
    x = torch.full((1 << 20,), 3.0, device="cuda")
    s = int(x.sum().item())
    free, total = torch.cuda.mem_get_info()
    return total, s


def main():
    mode = sys.argv[1]
    if mode == "spawn":
        torch.zeros(1, device="cuda")  # the parent's context first
    elif torch.cuda.is_initialized():
        gpuwork.out("error: CUDA initialised in the parent before fork")
        return 1
    with mp.get_context(mode).Pool(2) as pool:
        res = pool.map(work, range(2))
    ok = all(s == 3 << 20 for _, s in res)
    gpuwork.out("mode=%s workers=%d ok=%d totals=%s sums=%s" % (
        mode, len(res), ok, ",".join(str(t) for t, _ in res), ",".join(str(s) for _, s in res)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
