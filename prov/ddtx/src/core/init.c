/* SPDX-License-Identifier: BSD-2-Clause */
/* The entry point libfabric looks up after dlopen()ing libddtx-fi.so (compiled into the module only). */
#include "core/core.h"

FI_EXT_INI
{
	ddtx_settings_load();
	return &ddtx_prov;
}
