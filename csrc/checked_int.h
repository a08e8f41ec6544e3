/* Renamed: csrc/int_ops.h holds the checked int64 helpers. */
#include "int_ops.h"
