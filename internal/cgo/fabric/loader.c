// loader.c: opens libfabric at run time; see ops.h.
//
// fi_getinfo, fi_freeinfo and fi_dupinfo have one symbol version per fi_info
// layout (FABRIC_1.0 ... 1.3 in libfabric 1.17, FABRIC_1.7 and later in
// newer releases), and dlsym returns the newest. The layouts of abi.h are
// FABRIC_1.3's, so these are bound with dlvsym at that version: a newer
// library then hands out fi_info in the layout declared here (its
// compatibility entry points; the structs only ever grew at their ends).
// Ref: libfabric src/abi_1_0.c (fi_getinfo_1_3 and friends, COMPAT_SYMVER),
// libfabric.map.in (the FABRIC_1.x version nodes).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "ops.h"

struct goshmemi_fi_lib goshmemi_fi_lib;

int goshmemi_fab_load(const char *name, char *err, size_t errlen)
{
	struct goshmemi_fi_lib t;
	void *h;

	if (errlen > 0)
		err[0] = '\0';
	dlerror();
	h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();
		snprintf(err, errlen, "%s", e ? e : "dlopen failed");
		return GOSHMEMI_FAB_LOAD_DLOPEN;
	}
#define GOSHMEMI_BIND(field, sym, ver)                                          \
	do {                                                                    \
		dlerror();                                                      \
		*(void **)&t.field = dlvsym(h, sym, ver);                       \
		if (!t.field) {                                                 \
			const char *e = dlerror();                              \
			snprintf(err, errlen, "%s@%s: %s", sym, ver, e ? e : "not found"); \
			dlclose(h);                                             \
			return GOSHMEMI_FAB_LOAD_SYMBOL;                        \
		}                                                               \
	} while (0)
	GOSHMEMI_BIND(version, "fi_version", GOSHMEMI_FI_SYMVER_BASE);
	uint32_t v = t.version();
	if (v < GOSHMEMI_FI_API_VERSION) {
		snprintf(err, errlen, "%u.%u", v >> 16, v & 0xffff);
		dlclose(h);
		return GOSHMEMI_FAB_LOAD_VERSION;
	}
	GOSHMEMI_BIND(strerror, "fi_strerror", GOSHMEMI_FI_SYMVER_BASE);
	GOSHMEMI_BIND(getinfo, "fi_getinfo", GOSHMEMI_FI_SYMVER_INFO);
	GOSHMEMI_BIND(freeinfo, "fi_freeinfo", GOSHMEMI_FI_SYMVER_INFO);
	GOSHMEMI_BIND(dupinfo, "fi_dupinfo", GOSHMEMI_FI_SYMVER_INFO);
	GOSHMEMI_BIND(fabric, "fi_fabric", GOSHMEMI_FI_SYMVER_FABRIC);
#undef GOSHMEMI_BIND
	// The library stays open for the life of the process: providers
	// start threads and register destructors of their own.
	goshmemi_fi_lib = t;
	return 0;
}

uint32_t goshmemi_fab_loaded_version(void)
{
	return goshmemi_fi_lib.version ? goshmemi_fi_lib.version() : 0;
}

const char *goshmemi_fab_strerror(int errnum)
{
	if (goshmemi_fi_lib.strerror)
		return goshmemi_fi_lib.strerror(errnum);
	if (errnum < GOSHMEMI_FI_EOTHER)
		return strerror(errnum);
	return "libfabric error (libfabric not loaded)";
}
