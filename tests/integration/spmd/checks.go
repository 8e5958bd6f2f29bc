package main

// moreChecks are the registrations of the check files that add themselves
// (func init() { moreChecks = append(moreChecks, registerX) }); they run in
// file-name order, the same on every PE.
var moreChecks []func()

// registerAll lists every check in the order it runs. Names are
// "area/what[/type]"; select with -run.
func registerAll() {
	register("lifecycle/init-twice", checkInitTwice)

	typed("rma/put-get", putGet[int8](false), putGet[int16](false), putGet[int32](false), putGet[int64](false),
		putGet[uint8](false), putGet[uint16](false), putGet[uint32](false), putGet[uint64](false),
		putGet[float32](false), putGet[float64](false))
	typed("rma/nbi", putGet[int8](true), putGet[int16](true), putGet[int32](true), putGet[int64](true),
		putGet[uint8](true), putGet[uint16](true), putGet[uint32](true), putGet[uint64](true),
		putGet[float32](true), putGet[float64](true))
	typed("rma/p-g", pg[int8], pg[int16], pg[int32], pg[int64], pg[uint8], pg[uint16], pg[uint32], pg[uint64],
		pg[float32], pg[float64])
	register("rma/ctx", ctxCheck)

	typed("amo/fetch-add-pe0", nil, nil, fetchAddOnPE0[int32], fetchAddOnPE0[int64],
		nil, fetchAddOnPE0[uint16], fetchAddOnPE0[uint32], fetchAddOnPE0[uint64], nil, nil)
	register("amo/inc-everywhere", incEverywhere)
	register("amo/cas-lock/int32", casLock[int32])
	register("amo/cas-lock/uint64", casLock[uint64])
	typed("amo/swap", swapCheck[int8], nil, swapCheck[int32], swapCheck[int64], nil, swapCheck[uint16], nil,
		swapCheck[uint64], swapCheck[float32], swapCheck[float64])
	typed("amo/fetch-set", fetchSet[int8], fetchSet[int16], fetchSet[int32], fetchSet[int64], fetchSet[uint8],
		fetchSet[uint16], fetchSet[uint32], fetchSet[uint64], fetchSet[float32], fetchSet[float64])
	register("amo/float-bits", floatBits)
	typed("amo/bitwise", bitwise[int8], nil, bitwise[int32], bitwise[int64], nil, bitwise[uint16],
		bitwise[uint32], bitwise[uint64], nil, nil)
	typed("amo/narrow", narrow[int8], narrow[int16], nil, nil, narrow[uint8], narrow[uint16], nil, nil, nil, nil)

	typed("sync/wait-until", waitUntil[int8], waitUntil[int16], waitUntil[int32], waitUntil[int64], nil,
		waitUntil[uint16], waitUntil[uint32], waitUntil[uint64], waitUntil[float32], waitUntil[float64])
	register("sync/put-signal-set", putSignalSet)
	register("sync/put-signal-add", putSignalAdd)
	register("sync/fence-order", fenceOrder)
	register("sync/put-signal-load", putSignalLoad)
	register("sync/barrier-order", barrierOrder)

	typed("coll/reduce", reduceInt[int8], reduceInt[int16], reduceInt[int32], reduceInt[int64],
		reduceInt[uint8], reduceInt[uint16], reduceInt[uint32], reduceInt[uint64],
		reduceFloat[float32], reduceFloat[float64])
	typed("coll/bcast-fcollect-alltoall", collTyped[int8], collTyped[int16], collTyped[int32], collTyped[int64],
		collTyped[uint8], collTyped[uint16], collTyped[uint32], collTyped[uint64],
		collTyped[float32], collTyped[float64])
	register("coll/reduce-large", reduceLarge)
	register("coll/teams", teamsWithNested)
	register("coll/team-churn", teamChurn)

	register("alloc/sizes", allocSizes)
	register("alloc/reuse", allocReuse)
	register("alloc/1MiB", alloc1MiB)
	register("alloc/many", allocMany)

	register("err/pe-out-of-range", errPERange)
	register("err/out-of-bounds", errBounds)
	register("err/alloc-bad-size", errAllocBad)
	registerMin("err/not-symmetric", 2, errNotSymmetric)
	register("err/double-free", errDoubleFree)
	register("err/use-after-free", errUseAfterFree)
	register("err/reduce-op", errReduceOps)
	register("err/collective-args", errCollArgs)
	registry = append(registry, check{name: "err/timeout", fn: errTimeout, needTimeout: true})

	// Last: fills the heap (and, under GOSHMEM_DEBUG=1, leaves it quarantined).
	register("alloc/exhaust", allocExhaust)
	for _, more := range moreChecks {
		more()
	}
}
