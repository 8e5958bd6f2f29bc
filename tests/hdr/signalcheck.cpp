/* The same tests compiled as C++17 (g++): the header must work in both. */
#include "signalcheck.c"
