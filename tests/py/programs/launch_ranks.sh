#!/usr/bin/env bash
# launch_ranks.sh N PORT COMMAND...: N ranks of COMMAND started as a batch
# scheduler starts them, with RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
# MASTER_ADDR and MASTER_PORT set and no agent between them and whoever started
# this (conftest.launch_ranks). The first rank to fail ends the others, which
# would otherwise wait in a collective for gloo's half hour; the launch exits
# with that rank's status, or 0.
n=$1 port=$2
shift 2
# as torchrun does for more than one process a node: one intra-op thread a
# rank where the environment says none, not a pool each fighting the others
# for the cores (4 ranks of 2 threads on 2 cores made the straggler test's
# other ranks compute 25 ms a step where they compute 3)
if [ "$n" -gt 1 ]; then
    export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
fi
status=0
for ((r = 0; r < n; r++)); do
    RANK=$r LOCAL_RANK=$r WORLD_SIZE=$n LOCAL_WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 \
        MASTER_PORT=$port "$@" &
done
for ((r = 0; r < n; r++)); do
    wait -n && continue
    s=$?
    [ $status = 0 ] && status=$s
    kill $(jobs -p) 2>/dev/null
done
exit $status
