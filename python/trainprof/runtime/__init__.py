"""What the recorder asks of a running process: capture windows of PyTorch's
profiler (ops) and `trainprof bottleneck`'s modes (bottleneck)."""
