/* collcheck as C++17 (see collcheck.c) */
#include "collcheck.c"
