/* aot_api: the "aot" table Lua reaches through the FFI (aot.cdef). */
#include <stdint.h>

#include "aot_file.h"

static int32_t check_file(const char *path, char *err, size_t errlen) { return aot_file_check(path, err, errlen); }
static int32_t seal(const char *path, char *err, size_t errlen) { return aot_file_seal(path, err, errlen); }

static const CLAotApi aot_api = {
    .abi = AOT_API_ABI,
    .check_file = check_file,
    .seal = seal,
};

const void *cl_aot_api(void) { return &aot_api; }
