package runtime

// NativeHostCalls reports whether host data calls on host arrays (RMA,
// atomics, signals, locks) reach a backend holding native resources that
// Close releases: libfabric (ofi). Over shm they touch only Go state and
// the heap mappings, which Close retires rather than unmaps, even when the
// PE has a GPU.
func (r *Runtime) NativeHostCalls() bool { return r.ofi != nil }

// NativeQuiet reports whether a quiet or fence of every context may reach
// a backend holding native resources: libfabric, or a GPU remote transport
// (the proxy, IBGDA, CXI) whose operations the host issued. Operations on
// GPU arrays over CUDA IPC complete as they are issued and leave nothing
// for a quiet.
func (r *Runtime) NativeQuiet() bool {
	return r.ofi != nil || r.proxy != nil || r.softNIC != nil || r.mlx5 != nil || r.cxi != nil
}
