/* cl_api: the table of C subsystems that Lua reaches through the FFI.
 *
 * Lua never binds C symbols by name (that breaks when cutelua is linked
 * statically into someone else's program, and silently picks wrong versioned
 * CUDA symbols). Instead each subsystem publishes one struct of function
 * pointers whose declaration lives in a .cdef file that both the C compiler
 * and ffi.cdef read, so the two sides cannot drift. The host puts every table
 * into package.loaded["cute._capi"] as {ptr = lightuserdata, ctype = "...",
 * cdef = "..."}; lua/cute/_c.lua casts it. */
#ifndef CL_API_H
#define CL_API_H

#include <stddef.h>
#include <stdint.h>

#include "host.cdef"

#define CL_HOST_ABI 1

typedef struct ClApiEntry {
  const char *name;        /* key in cute._capi, e.g. "host" */
  const char *ctype;       /* struct name declared by the cdef */
  const char *cdef_path;   /* bundled path of the cdef file */
  const void *(*get)(void); /* returns the subsystem's table */
} ClApiEntry;

extern const ClApiEntry cl_api_entries[];
extern const size_t cl_api_entry_count;

const void *cl_host_api(void);

#endif
