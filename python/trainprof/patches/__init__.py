"""PyTorch's entry points patched to emit the phases (trainprof.torch's
instrument() applies them): the training loop (loop), the outermost module
calls (forward), CUDA device times (device), torch.distributed (distributed)
and functional collectives (funcol), and what they share (common)."""
