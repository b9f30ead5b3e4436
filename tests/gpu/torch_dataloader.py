"""torch_dataloader.py - a DataLoader with 2 worker processes (forked, CPU
only, as PyTorch requires) feeding a model on the GPU, pinned memory on.
Output: "batches=N sum=S ok=0|1" (S = the exact sum of the dataset on the
GPU, checked against the CPU's)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpuwork  # noqa: E402

try:
    import torch
    from torch.utils.data import DataLoader, TensorDataset
except ImportError:
    gpuwork.missing("torch")


def main():
    data = torch.arange(64 * 1024, dtype=torch.float64).reshape(-1, 64)
    loader = DataLoader(TensorDataset(data), batch_size=128, num_workers=2, pin_memory=True)
    torch.zeros(1, device="cuda")
    total = torch.zeros((), dtype=torch.float64, device="cuda")
    n = 0
    for (b,) in loader:
        total += b.to("cuda", non_blocking=True).sum()
        n += 1
    s = float(total.item())
    ok = s == float(data.sum()) and n == len(loader)
    gpuwork.out("batches=%d sum=%d ok=%d" % (n, s, ok))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
