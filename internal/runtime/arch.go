package runtime

// The kernel library carries SASS for sm_80 and sm_90 (and sm_100 when the
// nvcc that built it could): the driver picks the image for this GPU's
// architecture at module load. What differs between them at run time is
// decided here from the device's compute capability.

// pdlMajor is the first compute capability major version with
// programmatic dependent launch (griddepcontrol, CUDA's
// CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION).
// Ref: CUDA Driver API 12.x, CUlaunchAttributeID; PTX ISA 7.8, griddepcontrol (sm_90).
const pdlMajor = 9

// archLaunch turns overlapped launches off on a GPU older than sm_90
// (an A100 is sm_80): its image of the library has no griddepcontrol.wait
// (gpulib/lib.cu guards it with __CUDA_ARCH__ >= 900), so nothing in a
// kernel would hold it behind the stream's previous kernel if the driver
// scheduled it early; plain launches keep stream order by themselves. A
// compute capability that cannot be read gets plain launches too. Called
// under gpuLib.mu once the library is loaded, before its first launch.
func (r *Runtime) archLaunch() {
	major, _, err := r.GPU.Dev.ComputeCapability()
	if err != nil || major < pdlMajor {
		r.gpuState.overlap = false
	}
}
