# tests/gpu/mps.sh: start/stop the CUDA MPS daemon with private directories
# (source it: `. tests/gpu/mps.sh; mps_start; ...; mps_stop`). MPS changes
# no GPU setting; it lets the kernels of several processes on one GPU run at
# the same time (without it they are time-sliced: device barriers and
# ping-pongs across PEs cost a time slice each).
mps_started=0
mps_start() {
    export CUDA_MPS_PIPE_DIRECTORY=${CUDA_MPS_PIPE_DIRECTORY:-/tmp/mps_pipe}
    export CUDA_MPS_LOG_DIRECTORY=${CUDA_MPS_LOG_DIRECTORY:-/tmp/mps_log}
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    if nvidia-cuda-mps-control -d; then
        mps_started=1
        echo "mps: daemon started (pipe $CUDA_MPS_PIPE_DIRECTORY, log $CUDA_MPS_LOG_DIRECTORY)"
        return 0
    fi
    echo "mps: nvidia-cuda-mps-control -d failed"
    return 1
}
mps_stop() {
    if [ "$mps_started" = 1 ]; then
        echo quit | timeout 20 nvidia-cuda-mps-control || true
        mps_started=0
        sleep 1
        echo "mps: daemon stopped"
    fi
    unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
}
