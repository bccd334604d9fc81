/* SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception */
/* symbol_index.h - for the test drivers: an index per entry of mgpu-cached's symbol table
 * (IDX_<field>, NSYM) and each entry's field name (k_fields), for counting calls by name. */
#ifndef MGPU_CACHED_TEST_SYMBOL_INDEX_H
#define MGPU_CACHED_TEST_SYMBOL_INDEX_H

#include "cuda_api.h"

enum {
#define IDX(field, name, ret, params, args, req) IDX_##field,
  MC_CUDA_SYMBOLS(IDX)
#undef IDX
  NSYM
};

static const char *const k_fields[] = {
#define NAME(field, name, ret, params, args, req) #field,
    MC_CUDA_SYMBOLS(NAME)
#undef NAME
};

#endif
