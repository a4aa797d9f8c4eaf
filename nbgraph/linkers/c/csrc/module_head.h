/* nbgraph C module (ABI ${abi}).  Generated: do not edit. */
${math}
/* The fixed-width integer types, size_t, ptrdiff_t, NULL and offsetof from
   the compiler's own macros: parsing <stdint.h> and <stddef.h> costs every
   translation unit ~8 million compiler instructions.  The types are the
   headers' own (a header included later may declare them again).  A module
   using anything else of the two headers gets them (NBG_STD_HEADERS, set by
   the math block above: nbgraph.linkers.c.codegen.math_block). */
#if !defined(NBG_STD_HEADERS) && defined(__GNUC__) && defined(__INT8_TYPE__) \
    && defined(__INT64_TYPE__) && defined(__UINT64_TYPE__) && defined(__INTPTR_TYPE__) \
    && defined(__UINTPTR_TYPE__) && defined(__SIZE_TYPE__) && defined(__PTRDIFF_TYPE__)
typedef __INT8_TYPE__ int8_t;
typedef __INT16_TYPE__ int16_t;
typedef __INT32_TYPE__ int32_t;
typedef __INT64_TYPE__ int64_t;
typedef __UINT8_TYPE__ uint8_t;
typedef __UINT16_TYPE__ uint16_t;
typedef __UINT32_TYPE__ uint32_t;
typedef __UINT64_TYPE__ uint64_t;
typedef __INTPTR_TYPE__ intptr_t;
typedef __UINTPTR_TYPE__ uintptr_t;
typedef __SIZE_TYPE__ size_t;
typedef __PTRDIFF_TYPE__ ptrdiff_t;
#ifndef NULL
#define NULL ((void *)0)
#endif
#ifndef offsetof
#define offsetof(type, member) __builtin_offsetof(type, member)
#endif
#define NBG_STD_TYPES 1
#else
#include <stdint.h>
#include <stddef.h>
#endif
#define NBG_ERRLEN ${errlen}
#define NBG_RT_VERSION ${rt_version}
