/* nbgraph C module (ABI ${abi}).  Generated: do not edit. */
${math}
#define NBG_ERRLEN ${errlen}
#define NBG_RT_VERSION ${rt_version}
/* The fixed-width integer types, size_t, ptrdiff_t, NULL and offsetof from
   the compiler's own macros: parsing <stdint.h> and <stddef.h> costs every
   translation unit ~8 million compiler instructions.  The types are the
   headers' own (a header included later may declare them again).  A module
   using anything else of the two headers gets them (NBG_STD_HEADERS, set by
   the math block above: nbgraph.linkers.c.codegen.math_block). */
#if !defined(NBG_STD_HEADERS) && defined(__GNUC__) && defined(__INT8_TYPE__) \
    && defined(__INT64_TYPE__) && defined(__UINT64_TYPE__) && defined(__INTPTR_TYPE__) \
    && defined(__UINTPTR_TYPE__) && defined(__SIZE_TYPE__) && defined(__PTRDIFF_TYPE__)
${std_types}
#else
#include <stdint.h>
#include <stddef.h>
#endif
