"""What timing a functional collective (torch.distributed._functional_collectives,
as DTensor and tensor parallelism call them) costs the training: one process,
a gloo group of one, funcol.all_reduce of 1024 floats and the wait for its
result, with trainprof's wrappers (`trainprof.torch.instrument()`, no recorder
listening: what runs in the training) and without them (the functions they
wrap), alternating in the same process. Each figure is the median over
rounds of the best of 5 repeats of 2,000 calls, in microseconds per call.

    python3 bench/funcol_cost.py [ROUNDS]
"""

import json
import os
import socket
import statistics
import sys
import timeit

import torch
import torch.distributed as dist
import trainprof.torch as tpt


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    tpt.instrument()
    dist.init_process_group("gloo", rank=0, world_size=1)
    import torch.distributed._functional_collectives as funcol

    timed = funcol.all_reduce, funcol.wait_tensor
    plain = tuple(f.__trainprof_wrapped__ for f in timed)
    x, group = torch.ones(1024), dist.group.WORLD

    def call():
        funcol.all_reduce(x, "sum", group).wait()

    times = {"plain": [], "timed": []}
    for _ in range(rounds):
        for name, fns in (("plain", plain), ("timed", timed)):
            funcol.all_reduce, funcol.wait_tensor = fns
            for _ in range(100):
                call()
            times[name].append(min(timeit.repeat(call, number=2000, repeat=5)) / 2000 * 1e6)
    funcol.all_reduce, funcol.wait_tensor = timed
    dist.destroy_process_group()
    plain_us, timed_us = (statistics.median(times[k]) for k in ("plain", "timed"))
    print(
        json.dumps(
            {
                "rounds": rounds,
                "plain_us": round(plain_us, 2),
                "timed_us": round(timed_us, 2),
                "added_us": round(timed_us - plain_us, 2),
                "per_round_added_us": [
                    round(t - p, 2) for p, t in zip(times["plain"], times["timed"])
                ],
            }
        )
    )


if __name__ == "__main__":
    main()
